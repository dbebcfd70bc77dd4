// Sockets without a valid token are capped per instance (WS_MAX_ANONYMOUS_CONNECTIONS): each
// lives a few seconds at most (WS_INIT_TIMEOUT_MS, WS_ANONYMOUS_TIMEOUT_MS), but nothing bounded
// how many a client could hold open at once, each with its buffers, before this cap.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { backendName } from '../support/database.js';
import { waitFor } from '../support/streams.js';
import { startTestApp, type TestApp } from '../support/app.js';

let t: TestApp;
let url: string;
const sockets: WebSocket[] = [];

beforeAll(async () => {
  // Long timeouts: the sockets below stay open for the whole test unless the cap closes them.
  t = await startTestApp({ WS_MAX_ANONYMOUS_CONNECTIONS: '2', WS_INIT_TIMEOUT_MS: '60000', WS_ANONYMOUS_TIMEOUT_MS: '60000' });
  url = (await t.app.start(0)).replace(/^http/, 'ws');
});
afterEach(() => {
  for (const socket of sockets.splice(0)) socket.terminate();
});
afterAll(() => t.close());

interface Opened {
  socket: WebSocket;
  frames: { type: string }[];
  closed: { code: number; reason: string } | null;
}

/** Opens a graphql-transport-ws socket, sending connection_init with `params` unless it is null. */
async function open(params: Record<string, unknown> | null): Promise<Opened> {
  const socket = new WebSocket(url, 'graphql-transport-ws');
  sockets.push(socket);
  const opened: Opened = { socket, frames: [], closed: null };
  socket.on('message', (data) => opened.frames.push(JSON.parse(String(data))));
  socket.on('close', (code, reason) => (opened.closed = { code, reason: String(reason) }));
  await new Promise<void>((resolve, reject) => socket.once('open', () => resolve()).once('error', reject));
  if (params) {
    socket.send(JSON.stringify({ type: 'connection_init', payload: params }));
    await waitFor(() => opened.frames.some((frame) => frame.type === 'connection_ack') || opened.closed !== null, 'connection_ack or close');
  }
  return opened;
}

const acknowledged = (opened: Opened) => opened.frames.some((frame) => frame.type === 'connection_ack');

describe(`sockets without a valid token, per instance (${backendName})`, () => {
  it('past WS_MAX_ANONYMOUS_CONNECTIONS a new socket is closed with 1013; a socket that presents a valid token leaves the count, and a closed one frees its place', async () => {
    const silent = await open(null); // never sends connection_init
    const tokenless = await open({});
    expect(acknowledged(tokenless)).toBe(true);

    const refused = await open(null);
    await waitFor(() => refused.closed !== null, 'the third socket to close');
    expect(refused.closed).toEqual({ code: 1013, reason: 'Too many connections without a valid token on this server: try again later' });
    expect(silent.closed).toBeNull();
    expect(tokenless.closed).toBeNull();

    // One closes: a place is free, and a user takes it with a valid token, which leaves the count.
    silent.socket.close();
    await waitFor(() => silent.closed !== null, 'the silent socket to close');
    const token = await t.token('anonymous-cap-user', 'user');
    let user = await open({ authorization: `Bearer ${token}` });
    // The server learns of the close on its own time.
    for (let attempt = 0; attempt < 50 && !acknowledged(user); attempt++) user = await open({ authorization: `Bearer ${token}` });
    expect(acknowledged(user)).toBe(true);
    const another = await open(null);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(another.closed).toBeNull();
    expect(user.closed).toBeNull();

    const full = await open({});
    await waitFor(() => full.closed !== null, 'a socket past the cap to close');
    expect(full.closed?.code).toBe(1013);
  });
});
