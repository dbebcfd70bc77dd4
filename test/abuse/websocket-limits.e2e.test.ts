import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { backendName } from '../support/database.js';
import { createRun, createThread } from '../support/lifecycle.js';
import { subscribeSse, waitFor, type Stream } from '../support/streams.js';
import { TEST_JWT_SECRET, startTestApp, type TestApp } from '../support/app.js';
import { mintToken } from '../../src/auth/jwt.js';

// Raw graphql-transport-ws sockets, so every frame and close code the server sends is seen.

interface Frame {
  type: string;
  id?: string;
  payload?: any;
}

class RawSocket {
  readonly frames: Frame[] = [];
  closed: { code: number; reason: string } | null = null;
  private constructor(readonly socket: WebSocket) {
    socket.on('message', (data) => this.frames.push(JSON.parse(data.toString())));
    socket.on('close', (code, reason) => (this.closed = { code, reason: reason.toString() }));
  }

  /** Opens a socket and sends connection_init; waits for the ack or the close. */
  static async open(url: string, connectionParams: Record<string, unknown>): Promise<RawSocket> {
    const socket = new WebSocket(url.replace(/^http/, 'ws'), 'graphql-transport-ws');
    const raw = new RawSocket(socket);
    opened.push(raw);
    await new Promise<void>((resolve, reject) => socket.once('open', () => resolve()).once('error', reject));
    socket.send(JSON.stringify({ type: 'connection_init', payload: connectionParams }));
    await waitFor(() => raw.acknowledged || raw.closed !== null, 'connection_ack or close');
    return raw;
  }

  get acknowledged(): boolean {
    return this.frames.some((frame) => frame.type === 'connection_ack');
  }

  subscribe(id: string, query: string, variables: Record<string, unknown> = {}): void {
    this.socket.send(JSON.stringify({ id, type: 'subscribe', payload: { query, variables } }));
  }

  complete(id: string): void {
    this.socket.send(JSON.stringify({ id, type: 'complete' }));
  }

  of(id: string): Frame[] {
    return this.frames.filter((frame) => frame.id === id);
  }

  async errorOf(id: string): Promise<any[]> {
    await waitFor(() => this.of(id).some((frame) => frame.type === 'error') || this.closed !== null, `an error for ${id}`);
    const frame = this.of(id).find((candidate) => candidate.type === 'error');
    if (!frame) throw new Error(`the socket closed instead: ${JSON.stringify(this.closed)}`);
    return frame.payload;
  }

  async nextOf(id: string, count = 1): Promise<Frame[]> {
    await waitFor(() => this.of(id).filter((frame) => frame.type === 'next').length >= count || this.closed !== null, `${count} events for ${id}`);
    const next = this.of(id).filter((frame) => frame.type === 'next');
    if (next.length < count) throw new Error(`the socket closed: ${JSON.stringify(this.closed)}, frames ${JSON.stringify(this.frames)}`);
    return next;
  }

  async closedWith(): Promise<{ code: number; reason: string }> {
    await waitFor(() => this.closed !== null, 'the socket to close');
    return this.closed!;
  }
}

const opened: RawSocket[] = [];
let t: TestApp;
let url: string;

const LIMITS = {
  WS_MAX_SUBSCRIPTIONS_PER_CONNECTION: '3',
  WS_MAX_SUBSCRIPTIONS_PER_PRINCIPAL: '5',
  WS_MAX_CONNECTIONS_PER_PRINCIPAL: '3',
  WS_ANONYMOUS_TIMEOUT_MS: '300',
  WS_MAX_CONNECTION_PARAMS_BYTES: '2048',
  // Every socket here must have its connection_init read within it: in CI, once, 300 ms passed
  // before the server (in this test's process, beside PGlite) read one, and the socket closed 4408.
  // A loaded machine's event loop can stall for seconds: 15 s, which the 4408 test waits out.
  WS_INIT_TIMEOUT_MS: '15000',
};

beforeAll(async () => {
  t = await startTestApp(LIMITS);
  url = await t.app.start(0);
});
afterEach(() => {
  for (const raw of opened.splice(0)) raw.socket.terminate();
});
afterAll(() => t.close());

const live = (threadId: string, count: number) =>
  waitFor(() => t.app.pubsub.subscriberCount('run', threadId) === count, `${count} live subscriptions`);

const RUN_CHANGED = `subscription($threadId: ID!) { runChanged(threadId: $threadId) { id status } }`;

/** A user with a thread, and the connectionParams of a dashboard of theirs. */
async function dashboardUser() {
  const sub = `user-${randomUUID().slice(0, 8)}`;
  const token = await t.token(sub, 'user');
  const threadId = await createThread(t, token);
  return { token, threadId, params: { authorization: `Bearer ${token}` } };
}

describe(`graphql-ws abuse limits (${backendName})`, () => {
  it('a bad subscribe message answers that subscription with an error; the others keep running', async () => {
    const user = await dashboardUser();
    const socket = await RawSocket.open(url, user.params);
    socket.subscribe('healthy', RUN_CHANGED, { threadId: user.threadId });
    socket.subscribe('broken', 'subscription { runChanged(threadId: ');
    const errors = await socket.errorOf('broken');
    expect(errors[0].message).toMatch(/Syntax Error/);
    expect(errors[0].extensions?.code).toBe('GRAPHQL_PARSE_FAILED');
    await live(user.threadId, 1);
    await createRun(t, user.token, user.threadId);
    expect((await socket.nextOf('healthy'))[0]!.payload.data.runChanged.status).toBe('QUEUED');
    expect(socket.closed).toBeNull();
  });

  it('subscriptions per connection are capped; the others keep running and a freed slot is reusable', async () => {
    const user = await dashboardUser();
    const socket = await RawSocket.open(url, user.params);
    for (const id of ['a', 'b', 'c', 'd']) socket.subscribe(id, RUN_CHANGED, { threadId: user.threadId });
    const [error] = await socket.errorOf('d');
    expect(error.message).toMatch(/at most 3 subscriptions/);
    expect(error.extensions).toMatchObject({ code: 'BAD_USER_INPUT', limit: 'WS_MAX_SUBSCRIPTIONS_PER_CONNECTION', max: 3 });
    await live(user.threadId, 3);
    await createRun(t, user.token, user.threadId);
    for (const id of ['a', 'b', 'c']) await socket.nextOf(id);
    socket.complete('a');
    await live(user.threadId, 2);
    socket.subscribe('e', RUN_CHANGED, { threadId: user.threadId });
    await live(user.threadId, 3);
    await createRun(t, user.token, user.threadId);
    await socket.nextOf('e');
    expect(socket.of('e').some((frame) => frame.type === 'error')).toBe(false);
  });

  it('subscriptions per principal are capped across its connections', async () => {
    const user = await dashboardUser();
    const first = await RawSocket.open(url, user.params);
    const second = await RawSocket.open(url, user.params);
    for (const id of ['a', 'b', 'c']) first.subscribe(id, RUN_CHANGED, { threadId: user.threadId });
    await live(user.threadId, 3);
    await createRun(t, user.token, user.threadId);
    for (const id of ['a', 'b', 'c']) await first.nextOf(id);
    for (const id of ['d', 'e', 'f']) second.subscribe(id, RUN_CHANGED, { threadId: user.threadId });
    const [error] = await second.errorOf('f');
    expect(error.extensions).toMatchObject({ code: 'BAD_USER_INPUT', limit: 'WS_MAX_SUBSCRIPTIONS_PER_PRINCIPAL', max: 5 });
    await live(user.threadId, 5);
    await createRun(t, user.token, user.threadId);
    for (const id of ['d', 'e']) await second.nextOf(id);
    // Another principal is not affected.
    const other = await dashboardUser();
    const theirs = await RawSocket.open(url, other.params);
    theirs.subscribe('x', RUN_CHANGED, { threadId: other.threadId });
    await live(other.threadId, 1);
    await createRun(t, other.token, other.threadId);
    await theirs.nextOf('x');
  });

  it('SSE subscriptions count against the same per-principal cap', async () => {
    const user = await dashboardUser();
    const socket = await RawSocket.open(url, user.params);
    for (const id of ['a', 'b', 'c']) socket.subscribe(id, RUN_CHANGED, { threadId: user.threadId });
    await live(user.threadId, 3);
    const sse = [
      await subscribeSse(t.app, RUN_CHANGED, { threadId: user.threadId }, user.token),
      await subscribeSse(t.app, RUN_CHANGED, { threadId: user.threadId }, user.token),
    ];
    await live(user.threadId, 5);
    const refused = await subscribeSse(t.app, RUN_CHANGED, { threadId: user.threadId }, user.token);
    const [error] = (await refused.take(1))[0]!.errors!;
    expect(error!.extensions).toMatchObject({ code: 'BAD_USER_INPUT', limit: 'WS_MAX_SUBSCRIPTIONS_PER_PRINCIPAL', max: 5 });
    const second = await RawSocket.open(url, user.params);
    second.subscribe('d', RUN_CHANGED, { threadId: user.threadId });
    expect((await second.errorOf('d'))[0].extensions.limit).toBe('WS_MAX_SUBSCRIPTIONS_PER_PRINCIPAL');
    // An SSE stream that ends frees its place.
    await sse[0]!.close();
    await live(user.threadId, 4);
    // The server releases the place on its own time: a subscription is accepted once it has.
    let again: Stream | undefined;
    for (let attempt = 0; attempt < 50 && !again; attempt++) {
      const candidate = await subscribeSse(t.app, RUN_CHANGED, { threadId: user.threadId }, user.token);
      await waitFor(() => candidate.results.length > 0 || t.app.pubsub.subscriberCount('run', user.threadId) === 5, 'accepted or refused');
      if (candidate.results.length === 0) again = candidate;
      else await candidate.close();
    }
    if (!again) throw new Error('an SSE subscription was never accepted again');
    await live(user.threadId, 5);
    await createRun(t, user.token, user.threadId);
    expect((await again.take(1))[0]!.data).toMatchObject({ runChanged: { status: 'QUEUED' } });
    await Promise.all([sse[1]!.close(), refused.close(), again.close()]);
  });

  it('connections per principal are capped; closing one frees its place', async () => {
    const user = await dashboardUser();
    const sockets = [await RawSocket.open(url, user.params), await RawSocket.open(url, user.params), await RawSocket.open(url, user.params)];
    expect(sockets.every((socket) => socket.acknowledged)).toBe(true);
    const refused = await RawSocket.open(url, user.params);
    expect(refused.acknowledged).toBe(false);
    expect(await refused.closedWith()).toEqual({ code: 4429, reason: 'Too many connections for this principal (at most 3)' });
    sockets[0]!.socket.close();
    await sockets[0]!.closedWith();
    // The server learns of the close on its own time: a connection is accepted once it has.
    let again = await RawSocket.open(url, user.params);
    for (let attempt = 0; attempt < 50 && !again.acknowledged; attempt++) again = await RawSocket.open(url, user.params);
    expect(again.acknowledged).toBe(true);
  });

  it('a socket that never sends connection_init is closed after WS_INIT_TIMEOUT_MS', { timeout: 60_000 }, async () => {
    const socket = new WebSocket(url.replace(/^http/, 'ws'), 'graphql-transport-ws');
    const closed = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)));
    expect(await closed).toBe(4408);
  });

  it('connectionParams over the size limit close the connection', async () => {
    const user = await dashboardUser();
    const socket = await RawSocket.open(url, { ...user.params, padding: 'x'.repeat(4096) });
    expect(socket.acknowledged).toBe(false);
    expect(await socket.closedWith()).toEqual({ code: 4413, reason: 'connectionParams exceed 2048 bytes' });
  });

  it('a connection without a valid token gets its errors, then is closed after the anonymous timeout', async () => {
    // The subscribe must be answered within the connection's 300 ms: a loaded machine may close it
    // first, and that trial is played again.
    let socket: RawSocket | undefined;
    let answered: Frame[] = [];
    for (let trial = 0; trial < 10 && answered.length === 0; trial++) {
      socket = await RawSocket.open(url, {});
      expect(socket.acknowledged || socket.closed?.code === 4401).toBe(true);
      socket.subscribe('s', RUN_CHANGED, { threadId: randomUUID() });
      answered = await socket.nextOf('s').catch(() => []);
    }
    expect(answered[0]?.payload.errors[0].extensions.code).toBe('UNAUTHENTICATED');
    expect(await socket!.closedWith()).toEqual({ code: 4401, reason: 'Unauthorized: a connection without a valid token closes after 300 ms' });
  });

  it("a connection whose token expires ends its subscriptions, then is closed as one without a valid token, freeing its principal's slot", { timeout: 120_000 }, async () => {
    const sub = `expiring-${randomUUID().slice(0, 8)}`;
    const threadId = await createThread(t, await t.token(sub, 'user'));
    // Its three connections and the subscription must be taken before it expires: 9 to 10 s, room
    // for a loaded machine (a 1 to 2 s token, the thread made with it too, left too little).
    const shortLived = await mintToken(TEST_JWT_SECRET, { sub, role: 'user' }, Math.floor(Date.now() / 1000) + 10);
    const sockets = await Promise.all([1, 2, 3].map(() => RawSocket.open(url, { authorization: `Bearer ${shortLived}` })));
    expect(sockets.every((socket) => socket.acknowledged)).toBe(true);
    sockets[0]!.subscribe('s', RUN_CHANGED, { threadId });
    await waitFor(() => sockets[0]!.of('s').length > 0 || sockets[0]!.closed !== null, 'the subscription to end', 60_000);
    expect((await sockets[0]!.nextOf('s'))[0]!.payload.errors[0].extensions).toEqual({ code: 'SUBSCRIPTION_INTERRUPTED', reason: 'TOKEN_EXPIRED' });
    for (const socket of sockets) {
      await waitFor(() => socket.closed !== null, 'the socket to close', 60_000);
      expect(socket.closed).toEqual({ code: 4401, reason: 'Unauthorized: the token of this connection has expired; reconnect with a fresh one' });
    }
    // The three connections the cap allows that principal are free again.
    const fresh = await RawSocket.open(url, { authorization: `Bearer ${await t.token(sub, 'user')}` });
    expect(fresh.acknowledged).toBe(true);
  });

  it('a subscription document over the cost limit is refused, over graphql-ws and SSE', async () => {
    const user = await dashboardUser();
    let selection = 'id';
    for (let i = 0; i < 3; i++) selection = `runs(first: 500) { thread { ${selection} } }`;
    const heavy = `subscription($threadId: ID!) { runChanged(threadId: $threadId) { thread { ${selection} } } }`;
    const socket = await RawSocket.open(url, user.params);
    socket.subscribe('heavy', heavy, { threadId: user.threadId });
    const [error] = await socket.errorOf('heavy');
    expect(error.extensions).toMatchObject({ code: 'BAD_USER_INPUT', maxCost: 10_000_000 });
    expect(error.message).toMatch(/cost of \d+ exceeds the limit/);
    const sse = await subscribeSse(t.app, heavy, { threadId: user.threadId }, user.token);
    const [result] = await sse.take(1);
    expect(result!.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', maxCost: 10_000_000 });
    await sse.close();
  });

  it('the token and bracket limits answer BAD_USER_INPUT over HTTP and graphql-ws alike, with no HTTP detail over graphql-ws', async () => {
    const user = await dashboardUser();
    const documents = {
      tokens: `subscription { ${'__typename '.repeat(5001)}}`,
      brackets: `subscription { runChanged(threadId: ${'['.repeat(201)}1${']'.repeat(201)}) { id } }`,
    };
    const socket = await RawSocket.open(url, user.params);
    for (const [id, query] of Object.entries(documents)) {
      const response = await t.gql(query, {}, user.token);
      expect(response.errors?.[0]?.extensions?.code, id).toBe('BAD_USER_INPUT');
      socket.subscribe(id, query);
      const [error] = await socket.errorOf(id);
      expect(error.extensions, id).toEqual({ code: 'BAD_USER_INPUT' });
      expect(error.message).toBe(response.errors![0]!.message);
    }
    expect(socket.closed).toBeNull();
  });
});
