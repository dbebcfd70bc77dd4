// A message a graphql-ws client must not send (the server's own types, or none of the protocol's)
// closes its connection with 4400 and a short reason, whether the connection has a token or not,
// and the server's output stays one JSON object per line (no stack trace an anonymous client can
// make it print).
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { serverForFile, tokenFor } from '../e2e/support/server.js';

const server = serverForFile();

/** Opens a graphql-transport-ws connection, sends connection_init, then `message`; resolves with the close. */
async function closeAfter(message: string, connectionParams: Record<string, unknown>): Promise<{ code: number; reason: string }> {
  const socket = new WebSocket(server.wsUrl, 'graphql-transport-ws');
  const closed = new Promise<{ code: number; reason: string }>((resolve) => socket.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
  const acknowledged = new Promise((resolve) => socket.once('message', resolve));
  socket.send(JSON.stringify({ type: 'connection_init', payload: connectionParams }));
  await acknowledged;
  socket.send(message);
  return closed;
}

const SERVER_ONLY = [
  JSON.stringify({ type: 'next', id: 'x', payload: {} }),
  JSON.stringify({ type: 'connection_ack' }),
  JSON.stringify({ type: 'error', id: 'x', payload: [{ message: 'from the client' }] }),
];

describe('graphql-ws messages a client must not send', () => {
  for (const message of SERVER_ONLY) {
    for (const [who, params] of [
      ['without a token', async () => ({})],
      ['with a token', async () => ({ authorization: `Bearer ${await tokenFor('proto-owner', 'superadmin')}` })],
    ] as const) {
      it(`${message} ${who} closes the connection with 4400`, async () => {
        const { code, reason } = await closeAfter(message, await params());
        expect(code).toBe(4400);
        expect(reason).toMatch(/^Unexpected message of type "\w+"/);
        expect(reason.length).toBeLessThanOrEqual(123); // a close reason's limit
      });
    }
  }

  /** A new thread's runChanged subscribed twice with subscription id `id` on one connection: how the connection closed. */
  async function subscribedTwice(id: string): Promise<{ code: number; reason: Buffer }> {
    const token = await tokenFor('proto-owner', 'superadmin');
    const created = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query: 'mutation { createThread(input: { title: "ids" }) { id } }' }),
    });
    const threadId = (await created.json()).data.createThread.id;
    const subscribe = JSON.stringify({ type: 'subscribe', id, payload: { query: `subscription { runChanged(threadId: "${threadId}") { id } }` } });
    const socket = new WebSocket(server.wsUrl, 'graphql-transport-ws');
    const closed = new Promise<{ code: number; reason: Buffer }>((resolve) => socket.once('close', (code, reason) => resolve({ code, reason })));
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
    const acknowledged = new Promise((resolve) => socket.once('message', resolve));
    socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${token}` } }));
    await acknowledged;
    socket.send(subscribe);
    socket.send(subscribe);
    return closed;
  }

  it("a subscription id used twice closes with 4409, the id quoted cut (a close reason's 123 bytes)", async () => {
    const { code, reason } = await subscribedTwice('x'.repeat(100_000));
    expect(code).toBe(4409);
    expect(reason.toString()).toBe(`Subscriber for ${'x'.repeat(15)}…`);
  });

  it('a subscription id of emoji or CJK used twice closes with its quote cut between whole characters', async () => {
    for (const id of ['🦊'.repeat(1000), 'a' + '購読'.repeat(1000)]) {
      const { code, reason } = await subscribedTwice(id);
      expect(code).toBe(4409);
      expect(reason.byteLength).toBeLessThanOrEqual(123);
      const text = reason.toString();
      expect(text).not.toContain('\ufffd');
      expect(text).toMatch(/^Subscriber for .+…$/u);
      expect(id.startsWith(text.slice('Subscriber for '.length, -1))).toBe(true);
    }
  });

  it("leaves nothing but one-line JSON on the server's output", async () => {
    for (const message of SERVER_ONLY) await closeAfter(message, {});
    // The server's access line for a later request comes after anything those messages made it print.
    await fetch(server.url.replace(/\/graphql$/, '/healthz'), { headers: { 'x-request-id': 'after-the-messages' } });
    await expect.poll(() => server.process.output()).toContain('after-the-messages');
    const lines = server.process.output().split('\n').filter((line) => line !== '');
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(() => JSON.parse(line), line).not.toThrow();
    expect(server.process.output()).not.toMatch(/Unexpected message| {4}at /);
  });
});
