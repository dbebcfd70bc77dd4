// docs/operations.md, "Behind a reverse proxy": examples/operations/nginx.conf in front of a
// server, as an operator runs it (TLS aside: the test listens on plain HTTP), and everything a
// browser or a client does through it under /audit/: the page, GraphQL over POST and GET, SSE and
// graphql-ws subscriptions, a browser's stream session, a body over the limit, /metrics.
// Skipped where nginx is not installed (apt-get install nginx), unless REQUIRE_NGINX=1.
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as pause } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sseResponse, subscribeSse, subscribeWs } from '../support/streams.js';
import { e2eActors, freePort, serverForFile } from './support/server.js';

const NGINX = process.env.NGINX_PATH ?? '/usr/sbin/nginx';
const EXAMPLE = join(import.meta.dirname, '../../examples/operations/nginx.conf');

/** The example for a test: nginx on `port` over plain HTTP, the server on `serverPort`. */
function configFor(dir: string, port: number, serverPort: number): string {
  const site = readFileSync(EXAMPLE, 'utf8')
    .replace('listen 443 ssl;', `listen 127.0.0.1:${port};`)
    .replace(/^\s*ssl_certificate.*$/gm, '')
    .replaceAll('127.0.0.1:4000', `127.0.0.1:${serverPort}`);
  const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((name) => `${name}_temp_path ${join(dir, name)};`).join('\n  ');
  return `daemon off;\nworker_processes 1;\npid ${join(dir, 'nginx.pid')};\nerror_log ${join(dir, 'error.log')};\nevents { worker_connections 64; }\nhttp {\n  access_log off;\n  ${temp}\n${site}\n}\n`;
}

describe.skipIf(!existsSync(NGINX) && process.env.REQUIRE_NGINX !== '1')('behind nginx under /audit/ (examples/operations/nginx.conf)', () => {
  const server = serverForFile();
  let nginx: ChildProcess;
  let dir: string;
  let base: string;
  beforeAll(async () => {
    if (!existsSync(NGINX)) throw new Error(`REQUIRE_NGINX=1, but there is no nginx at ${NGINX} (NGINX_PATH)`);
    dir = mkdtempSync(join(tmpdir(), 'audit-nginx-'));
    chmodSync(dir, 0o755); // started as root, nginx's workers run as nobody and keep bodies in its temp paths
    const port = await freePort();
    writeFileSync(join(dir, 'nginx.conf'), configFor(dir, port, Number(new URL(server.url).port)));
    nginx = spawn(NGINX, ['-p', dir, '-c', join(dir, 'nginx.conf')], { stdio: 'ignore' });
    base = `http://127.0.0.1:${port}/audit/`;
    let up = false;
    while (!up) up = await fetch(base).then(() => true, () => pause(100).then(() => false));
  }, 30_000);
  afterAll(() => {
    nginx?.kill('SIGQUIT');
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const post = (token: string, query: string, variables: object = {}) =>
    fetch(`${base}graphql`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify({ query, variables }) });

  it('serves the page and its files, GraphQL over POST and GET, and the GraphiQL page', async () => {
    const { owner } = await e2eActors();
    expect((await fetch(`${base.slice(0, -1)}`, { redirect: 'manual' })).headers.get('location')).toMatch(/\/audit\/$/);
    const page = await fetch(base);
    expect([page.status, page.headers.get('content-type')]).toEqual([200, 'text/html; charset=utf-8']);
    for (const file of (await page.text()).matchAll(/(?:src|href)="([^"]+)"/g)) expect((await fetch(new URL(file[1]!, base))).status).toBe(200);
    expect(await (await post(owner, '{ threads { edges { node { id } } } }')).json()).toMatchObject({ data: { threads: { edges: expect.any(Array) } } });
    const get = await fetch(`${base}graphql?query=${encodeURIComponent('{ threads { edges { node { id } } } }')}`, { headers: { authorization: `Bearer ${owner}` } });
    expect(await get.json()).toMatchObject({ data: { threads: { edges: expect.any(Array) } } });
    const graphiql = await fetch(`${base}graphql`, { headers: { accept: 'text/html' } });
    expect([graphiql.status, graphiql.headers.get('content-type')]).toEqual([200, expect.stringMatching(/^text\/html/)]);
  });

  it('delivers thread changes over SSE and graphql-ws as they commit, nothing held back by buffering', async () => {
    const { owner } = await e2eActors();
    const threadId = (await (await post(owner, 'mutation { createThread(input: { title: "proxied" }) { id } }')).json()).data.createThread.id;
    const after = (await (await post(owner, 'query($t: ID!) { thread(id: $t) { changeCursor } }', { t: threadId })).json()).data.thread.changeCursor;
    const createRun = () => post(owner, 'mutation($t: ID!) { createRun(input: { threadId: $t }) { id } }', { t: threadId });
    const query = 'subscription($t: ID!, $after: String) { threadChanges(threadId: $t, after: $after) { run { status } } }';
    const sse = await subscribeSse(`${base}graphql`, query, { t: threadId, after }, owner);
    const ws = subscribeWs(`${base}graphql`, query, { t: threadId, after }, owner);
    const queued = { data: { threadChanges: { run: { status: 'QUEUED' } } } };
    try {
      // The first run reaches both (live, or read back after the cursor): each stream is open.
      await createRun();
      for (const stream of [sse, ws]) expect(await stream.take(1)).toEqual([queued]);
      // The second is one each stream is open for: it arrives while the stream stays open.
      await createRun();
      for (const stream of [sse, ws]) expect(await stream.take(2)).toEqual([queued, queued]);
    } finally {
      await sse.close();
      await ws.close();
    }
  });

  it('asks nginx not to buffer its SSE answers (X-Accel-Buffering: no), a header nginx keeps to itself', async () => {
    // nginx buffers a response it may read faster than its client does: up to 1 GB of a stalled
    // reader's stream on its disk, unseen by the server, which bounds what it holds for a slow
    // reader (docs/subscriptions.md, "A subscriber that falls behind"). nginx reads the header
    // and passes it on to no one: the server's own answer shows it.
    const { owner } = await e2eActors();
    const query = 'subscription { toolActivity { windowSeconds } }';
    const controller = new AbortController();
    const direct = await sseResponse(server.url, query, {}, owner, controller.signal);
    expect([direct.headers.get('content-type'), direct.headers.get('x-accel-buffering')]).toEqual(['text/event-stream', 'no']);
    const through = await fetch(`${base}graphql?query=${encodeURIComponent(query)}`, { headers: { accept: 'text/event-stream', authorization: `Bearer ${owner}` }, signal: controller.signal });
    expect([through.status, through.headers.get('x-accel-buffering')]).toEqual([200, null]);
    controller.abort();
  });

  it("signs a page of its origin in to streams: the cookie's path is the prefix's, and the stream opens with it", async () => {
    const { owner } = await e2eActors();
    const origin = new URL(base).origin;
    const signedIn = await fetch(`${base}graphql/stream-session`, { method: 'POST', headers: { origin, authorization: `Bearer ${owner}` } });
    expect(signedIn.status).toBe(200);
    const cookie = signedIn.headers.get('set-cookie') ?? '';
    expect(cookie).toMatch(/; Path=\/audit\/graphql\/stream(;|$)/);
    const controller = new AbortController();
    const stream = await fetch(`${base}graphql/stream?${new URLSearchParams({ query: 'subscription { toolActivity { windowSeconds } }' })}`, {
      headers: { accept: 'text/event-stream', origin, cookie: cookie.split(';')[0]! },
      signal: controller.signal,
    });
    expect([stream.status, stream.headers.get('content-type')]).toEqual([200, 'text/event-stream']);
    controller.abort();
  });

  it("answers a body over the server's limit with the server's JSON 413, and serves no /metrics", async () => {
    const { owner } = await e2eActors();
    const big = await fetch(`${base}graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${owner}` },
      body: JSON.stringify({ query: '{ threads { edges { node { id } } } }', variables: { pad: 'x'.repeat(8.5 * 1024 * 1024) } }),
    });
    const text = await big.text();
    expect([big.status, text.slice(0, 300)]).toEqual([413, expect.stringContaining('"code":"BAD_USER_INPUT"')]);
    expect((await fetch(`${base}metrics`)).status).toBe(404);
  });
});
