// The timeline page's files and its answers as a phone on a slow network fetches them: compressed,
// and the files not sent again to a browser that already holds them.
import { request } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { backendName } from '../support/database.js';
import { createThread } from '../support/lifecycle.js';

let t: TestApp;
let base: string;
beforeAll(async () => {
  t = await startTestApp();
  base = (await t.app.start(0)).replace(/\/graphql$/, '');
});
afterAll(() => t.close());

/** A bare request (node's fetch decompresses by itself): what travels. */
const fetchRaw = (path: string, headers: Record<string, string>, body?: string) =>
  new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; bytes: number; body: Buffer }>((resolve, reject) => {
    const sent = request(`${base}${path}`, { method: body === undefined ? 'GET' : 'POST', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, bytes: Buffer.concat(chunks).byteLength, body: Buffer.concat(chunks) }));
    });
    sent.on('error', reject).end(body);
  });

describe(`the timeline page's files (${backendName})`, () => {
  it.each(['/', '/app.js', '/app.css'])('%s is sent gzipped to a browser that accepts it, and a browser that has it gets 304', async (path) => {
    const plain = await fetchRaw(path, {});
    expect(plain.status).toBe(200);
    expect(plain.headers['content-encoding']).toBeUndefined();
    const etag = plain.headers.etag as string;
    expect(etag).toMatch(/^"[^"]+"$/);
    expect(plain.headers['cache-control']).toBe('no-cache');

    const gzipped = await fetchRaw(path, { 'accept-encoding': 'gzip, deflate, br, zstd' });
    expect(gzipped.status).toBe(200);
    expect(gzipped.headers['content-encoding']).toBe('gzip');
    expect(gzipped.headers.vary).toMatch(/accept-encoding/i);
    expect(gzipped.headers.etag).toBe(etag);
    expect(gzipped.bytes).toBeLessThan(plain.bytes * 0.7);
    expect(Number(gzipped.headers['content-length'])).toBe(gzipped.bytes);
    expect(gzipped.headers['content-security-policy']).toBe(plain.headers['content-security-policy']);

    const again = await fetchRaw(path, { 'accept-encoding': 'gzip', 'if-none-match': etag });
    expect(again.status).toBe(304);
    expect(again.bytes).toBe(0);
    expect(again.headers.etag).toBe(etag);
    expect((await fetchRaw(path, { 'if-none-match': '"another"' })).status).toBe(200);
  });
});

describe(`GraphQL answers (${backendName})`, () => {
  it('a large answer is sent gzipped to a client that accepts it, a stream never is', async () => {
    const token = await t.token('ada', 'superadmin');
    const threadId = await createThread(t, token);
    const content = Array.from({ length: 400 }, (_, i) => ({ step: i, note: 'reconciled ledger entry' }));
    expect((await t.gql(`mutation($input: AppendMessageInput!) { appendMessage(input: $input) { id } }`, { input: { threadId, role: 'USER', content } }, token)).errors).toBeUndefined();
    const query = JSON.stringify({ query: `query($id: ID!) { thread(id: $id) { messages { content } } }`, variables: { id: threadId } });
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${token}` };

    const plain = await fetchRaw('/graphql', headers, query);
    expect(plain.headers['content-encoding']).toBeUndefined();
    const gzipped = await fetchRaw('/graphql', { ...headers, 'accept-encoding': 'gzip, deflate, br, zstd' }, query);
    expect(gzipped.status).toBe(200);
    expect(gzipped.headers['content-encoding']).toBe('gzip');
    expect(gzipped.headers.vary).toMatch(/accept-encoding/i);
    expect(gzipped.headers['cache-control']).toBe('no-store');
    expect(gzipped.bytes).toBeLessThan(plain.bytes / 4);
    expect(JSON.parse(gunzipSync(gzipped.body).toString())).toEqual(JSON.parse(plain.body.toString()));

    // An SSE stream's events would wait in the compressor: never compressed.
    const stream = await new Promise<Record<string, string | string[] | undefined>>((resolve, reject) => {
      const sent = request(`${base}/graphql`, { method: 'POST', headers: { ...headers, accept: 'text/event-stream', 'accept-encoding': 'gzip' } }, (res) => {
        resolve(res.headers);
        res.destroy();
      });
      sent.on('error', reject).end(JSON.stringify({ query: `subscription($id: ID!) { threadChanges(threadId: $id) { cursor } }`, variables: { id: threadId } }));
    });
    expect(stream['content-type']).toMatch(/text\/event-stream/);
    expect(stream['content-encoding']).not.toBe('gzip');
  });
});
