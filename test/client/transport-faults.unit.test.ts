// What a runtime author meets between the client and the server: a proxy's HTML error page, a
// server restarting for a few seconds. The client retries both with the byte-identical body.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { AuditClient, DEFAULT_RETRY_POLICY, backoffDelayMs } from '@agent-audit/client';
import { rejectionOf } from '../support/client-errors.js';

const lease = { runId: 'run-1', epoch: 3 };
const toolAudit = { __typename: 'ToolAudit', id: 'audit-1', status: 'RUNNING' };
const ok = JSON.stringify({ data: { recordToolStarted: toolAudit } });

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

/** A local HTTP server answering each request with the next of `answers` (the last repeats); records the bodies. */
async function serve(answers: { status: number; type: string; body: string }[], port = 0) {
  const bodies: string[] = [];
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      bodies.push(body);
      const answer = answers[Math.min(bodies.length, answers.length) - 1]!;
      response.writeHead(answer.status, { 'content-type': answer.type }).end(answer.body);
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { bodies, port: (server.address() as AddressInfo).port, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql` };
}

const startTool = (client: AuditClient) => client.recordToolStarted({ lease, toolCallId: 'call-1', name: 'search', sequence: 7n });
const quickRetries = { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 5, timeoutMs: 1_000 };

describe('the transport', () => {
  it('retries a 5xx whose body is not JSON (a proxy\'s HTML error page, a Cloudflare-style 520)', async () => {
    for (const status of [500, 520]) {
      const server = await serve([
        { status, type: 'text/html', body: '<html><body>Internal Server Error</body></html>' },
        { status: 200, type: 'application/json', body: ok },
      ]);
      const client = new AuditClient({ url: server.url, token: 'worker-token', retry: quickRetries, batching: false });
      expect(await startTool(client)).toEqual(toolAudit);
      expect(server.bodies).toHaveLength(2);
      expect(server.bodies[1]).toBe(server.bodies[0]);
    }
  });

  it('gives up on a 5xx HTML page after maxAttempts, naming its status; a 4xx that is not JSON is final', async () => {
    const failing = await serve([{ status: 500, type: 'text/html', body: '<html>oops</html>' }]);
    const error = await rejectionOf(startTool(new AuditClient({ url: failing.url, token: 't', retry: quickRetries, batching: false })));
    expect(error).toMatchObject({ code: 'TRANSPORT_ERROR', retryable: true, httpStatus: 500, attempts: 3 });

    const missing = await serve([{ status: 404, type: 'text/html', body: '<html>not here</html>' }]);
    const notFound = await rejectionOf(startTool(new AuditClient({ url: missing.url, token: 't', retry: quickRetries, batching: false })));
    expect(notFound).toMatchObject({ code: 'TRANSPORT_ERROR', retryable: false, httpStatus: 404, attempts: 1 });
    expect(missing.bodies).toHaveLength(1);
  });

  it('by default keeps retrying for long enough to outlast a server restart of a few seconds', () => {
    const delays = (random: number) =>
      Array.from({ length: DEFAULT_RETRY_POLICY.maxAttempts - 1 }, (_, i) => backoffDelayMs(DEFAULT_RETRY_POLICY, i + 1, () => random));
    const shortest = delays(0).reduce((a, b) => a + b, 0);
    const longest = delays(1).reduce((a, b) => a + b, 0);
    // An embedded server restarts in about 4 s; even the shortest jitter waits well past that.
    expect(shortest).toBeGreaterThanOrEqual(7_000);
    expect(longest).toBeLessThanOrEqual(16_000);
    expect(Math.max(...delays(1))).toBe(DEFAULT_RETRY_POLICY.maxDelayMs);
  });

  it('with the default policy, a request sent while the server is down for 3 s is answered once it is back', async () => {
    const probe = await serve([{ status: 200, type: 'application/json', body: ok }]);
    const { port } = probe;
    await new Promise((resolve) => servers.pop()!.close(resolve));
    // Nothing listens on the port now: every attempt is refused until the server comes back.
    const client = new AuditClient({ url: `http://127.0.0.1:${port}/graphql`, token: 'worker-token', batching: false });
    // Settled at once so a give-up before the server is back fails the expectation, not the run.
    const answer = startTool(client).then((value) => ({ value }), (error: unknown) => ({ error }));
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const back = await serve([{ status: 200, type: 'application/json', body: ok }], port);
    expect(await answer).toEqual({ value: toolAudit });
    expect(back.bodies).toHaveLength(1);
  }, 30_000);
});
