import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { AuditClient } from '@agent-audit/client';
import { rejectionOf } from '../support/client-errors.js';

// The client's default transport (no `fetch` given): Node's HTTP client, against a local HTTP server.

const lease = { runId: 'run-1', owner: 'worker-1', epoch: 3, expiresAt: '2030-01-01T00:00:00.000Z' };
const toolAudit = { __typename: 'ToolAudit', id: 'audit-1', status: 'RUNNING' };

interface Received {
  headers: IncomingMessage['headers'];
  body: string;
}

type Answer = (request: Received, response: ServerResponse) => void;

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** A server that answers each request with the next answer (the last one repeats), counting its connections. */
async function serve(...answers: Answer[]) {
  const received: Received[] = [];
  const connections = new Set<Socket>();
  const server = createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => (body += chunk));
    request.on('end', () => {
      received.push({ headers: request.headers, body });
      answers[Math.min(received.length, answers.length) - 1]!(received.at(-1)!, response);
    });
  });
  server.on('connection', (socket) => connections.add(socket));
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/graphql`, received, connections };
}

const json =
  (status: number, value: unknown, headers: Record<string, string> = {}): Answer =>
  (_request, response) => {
    response.writeHead(status, { 'content-type': 'application/json', ...headers });
    response.end(JSON.stringify(value));
  };
const data = (field: string, value: unknown) => json(200, { data: { [field]: value } });
const silent: Answer = () => {};

function clientAt(url: string, maxAttempts = 3) {
  return new AuditClient({ url, token: 'worker-token', clockId: 'test-clock', batching: false, retry: { maxAttempts, baseDelayMs: 1, maxDelayMs: 5, timeoutMs: 200 } });
}

const startTool = (client: AuditClient) => client.recordToolStarted({ lease, toolCallId: 'call-1', name: 'search', effectiveInput: { q: 'é ✓' }, sequence: 7n });


describe("AuditClient's default transport (Node's HTTP client)", () => {
  it('posts the JSON request with its headers and returns the answer; later requests reuse the connection', async () => {
    const server = await serve(data('recordToolStarted', toolAudit));
    const client = clientAt(server.url);

    expect(await startTool(client)).toEqual(toolAudit);
    expect(await startTool(client)).toEqual(toolAudit);

    const [request] = server.received;
    expect(request!.headers).toMatchObject({ authorization: 'Bearer worker-token', 'content-type': 'application/json' });
    expect(Number(request!.headers['content-length'])).toBe(Buffer.byteLength(request!.body));
    expect(JSON.parse(request!.body).variables.input.effectiveInput).toEqual({ q: 'é ✓' });
    expect(server.connections.size).toBe(1);
  });

  it('retries the identical request after an UNAVAILABLE answer and after a timeout, then returns the result', async () => {
    const server = await serve(json(503, { errors: [{ message: 'database unavailable', extensions: { code: 'UNAVAILABLE' } }] }, { 'retry-after': '0' }), silent, data('recordToolStarted', toolAudit));

    expect(await startTool(clientAt(server.url))).toEqual(toolAudit);
    expect(server.received).toHaveLength(3);
    expect(new Set(server.received.map((request) => request.body)).size).toBe(1);
  });

  it('gives up with a retryable TRANSPORT_ERROR when no answer comes in time', async () => {
    const server = await serve(silent);
    const error = await rejectionOf(startTool(clientAt(server.url, 2)));

    expect(error.code).toBe('TRANSPORT_ERROR');
    expect(error.message).toMatch(/timed out/);
    expect(error.attempts).toBe(2);
  });

  it('reports a refused connection as a network error', async () => {
    const server = await serve(silent);
    const url = server.url;
    servers.splice(0).forEach((closed) => closed.close());
    const error = await rejectionOf(startTool(clientAt(url, 1)));

    expect(error.code).toBe('TRANSPORT_ERROR');
    expect(error.retryable).toBe(true);
    expect(error.message).toMatch(/network error/);
  });
});
