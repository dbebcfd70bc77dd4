import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it, onTestFinished, vi } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { keepConnectionsAlive } from '../../src/transports/keep-alive.js';

// The server's WebSocket keep-alive (src/transports/keep-alive.ts): a client that stops answering
// pings is cut, and connections opened together are not pinged together. The keep-alive's timers
// are fake and moved by the test, the sockets real: a loaded machine's slow event loop can neither
// delay a ping past its period nor let a pong in flight be taken for no answer.

const PERIOD_MS = 400;

beforeEach(() => void vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] }));
afterEach(() => void vi.useRealTimers());

/** A server with the keep-alive, and the fake time at which it pinged each connection, in order of connection. */
async function serverWithKeepAlive() {
  const server = new WebSocketServer({ port: 0 });
  onTestFinished(() => void server.close());
  keepConnectionsAlive(server, PERIOD_MS);
  const pingedAt: number[][] = [];
  const pongs = { count: 0 };
  server.on('connection', (socket) => {
    const times: number[] = [];
    pingedAt.push(times);
    socket.on('pong', () => pongs.count++);
    const ping = socket.ping.bind(socket);
    socket.ping = (...args: Parameters<typeof ping>) => (times.push(Date.now()), ping(...args));
  });
  await new Promise((resolve) => server.once('listening', resolve));
  return { url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}`, server, pingedAt, pongs };
}

function connect(url: string, options: { autoPong?: boolean } = {}) {
  const client = new WebSocket(url, options);
  onTestFinished(() => client.terminate());
  return client;
}

/** Real time passes (sockets deliver) while the fake clock stands still. */
async function until(holds: () => boolean) {
  const deadline = performance.now() + 20_000;
  while (!holds()) {
    if (performance.now() > deadline) throw new Error('still waiting after 20 s of real time');
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe('WebSocket keep-alive', () => {
  it('pings connections opened together at different moments of the period, each within its first period', async () => {
    const { url, server, pingedAt } = await serverWithKeepAlive();
    const clients = Array.from({ length: 40 }, () => connect(url));
    await Promise.all(clients.map((client) => new Promise((resolve) => client.once('open', resolve))));
    await until(() => server.clients.size === 40);
    const openedAt = Date.now();

    await vi.advanceTimersByTimeAsync(PERIOD_MS);
    const firstPings = pingedAt.map((times) => times[0]! - openedAt);
    expect(firstPings.every((ms) => ms >= 0 && ms <= PERIOD_MS)).toBe(true);
    // Uniform over 400 ms: forty first pings all within 100 ms of each other would take ~(1/4)^39 luck.
    expect(Math.max(...firstPings) - Math.min(...firstPings)).toBeGreaterThan(100);
  });

  it('cuts a client that stops answering pings and keeps one that answers', async () => {
    const { url, server, pingedAt, pongs } = await serverWithKeepAlive();
    const silent = connect(url, { autoPong: false });
    const answering = connect(url);
    let silentClosed: number | null = null;
    silent.once('close', (code) => (silentClosed = code));
    await Promise.all([silent, answering].map((client) => new Promise((resolve) => client.once('open', resolve))));
    await until(() => server.clients.size === 2);

    // Both pinged within the first period; the answering client's pong arrives before time moves on.
    await vi.advanceTimersByTimeAsync(PERIOD_MS);
    expect(pingedAt.map((times) => times.length)).toEqual([1, 1]);
    await until(() => pongs.count === 1);
    // A period after its ping the silent one is cut; the other is pinged again and answers.
    await vi.advanceTimersByTimeAsync(PERIOD_MS);
    await until(() => silentClosed !== null && pongs.count === 2);
    expect(silentClosed).toBe(1006); // terminated: no close frame
    await vi.advanceTimersByTimeAsync(PERIOD_MS);
    await until(() => pongs.count === 3);
    expect(answering.readyState).toBe(WebSocket.OPEN);
  });
});
