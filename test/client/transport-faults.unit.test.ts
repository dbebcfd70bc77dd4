// What a runtime author meets between the client and the server: a proxy's HTML error page.
// The client retries it with the byte-identical body.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { AuditClient } from '@agent-audit/client';
import { rejectionOf } from '../support/client-errors.js';

const lease = { runId: 'run-1', epoch: 3 };
const toolAudit = { __typename: 'ToolAudit', id: 'audit-1', status: 'RUNNING' };
const ok = JSON.stringify({ data: { recordToolStarted: toolAudit } });

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

/** A local HTTP server answering each request with the next of `answers` (the last repeats); records the bodies. */
async function serve(answers: { status: number; type: string; body: string }[]) {
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
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { bodies, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql` };
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
});
