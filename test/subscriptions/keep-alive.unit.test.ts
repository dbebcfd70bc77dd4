import type { AddressInfo } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { keepConnectionsAlive } from '../../src/transports/keep-alive.js';

// The server's WebSocket keep-alive (src/transports/keep-alive.ts): a client that stops answering
// pings is cut, and connections opened together are not pinged together.

const PERIOD_MS = 400;

async function serverWithKeepAlive() {
  const server = new WebSocketServer({ port: 0 });
  onTestFinished(() => void server.close());
  keepConnectionsAlive(server, PERIOD_MS);
  return `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function connect(url: string, options: { autoPong?: boolean } = {}) {
  const client = new WebSocket(url, options);
  onTestFinished(() => client.terminate());
  return client;
}

describe('WebSocket keep-alive', () => {
  it('pings connections opened together at different moments of the period, each within its first period', async () => {
    const url = await serverWithKeepAlive();
    const openedAt = Date.now();
    const firstPings = await Promise.all(
      Array.from({ length: 40 }, () => new Promise<number>((resolve) => connect(url).once('ping', () => resolve(Date.now() - openedAt)))),
    );
    // Within the first period, with room for a loaded machine's event loop (the next ping is a whole period later).
    expect(Math.max(...firstPings)).toBeLessThan(2 * PERIOD_MS + 300);
    // Uniform over 400 ms: forty first pings all within 100 ms of each other would take ~(1/4)^39 luck.
    expect(Math.max(...firstPings) - Math.min(...firstPings)).toBeGreaterThan(100);
  });

  it('cuts a client that stops answering pings and keeps one that answers', async () => {
    const url = await serverWithKeepAlive();
    const silent = connect(url, { autoPong: false });
    const answering = connect(url);
    const silentClosed = new Promise<number>((resolve) => silent.once('close', (code) => resolve(code)));
    await new Promise((resolve) => answering.once('open', resolve));

    expect(await silentClosed).toBe(1006); // terminated: no close frame
    await new Promise((resolve) => setTimeout(resolve, PERIOD_MS));
    expect(answering.readyState).toBe(WebSocket.OPEN);
  });
});
