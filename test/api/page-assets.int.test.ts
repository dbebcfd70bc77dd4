// The timeline page's files as a phone on a slow network fetches them: compressed, and not sent
// again to a browser that already holds them.
import { get } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { backendName } from '../support/database.js';

let t: TestApp;
let base: string;
beforeAll(async () => {
  t = await startTestApp();
  base = (await t.app.start(0)).replace(/\/graphql$/, '');
});
afterAll(() => t.close());

/** A bare request (node's fetch decompresses by itself): what travels. */
const fetchRaw = (path: string, headers: Record<string, string>) =>
  new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; bytes: number }>((resolve, reject) => {
    get(`${base}${path}`, { headers }, (res) => {
      let bytes = 0;
      res.on('data', (chunk: Buffer) => (bytes += chunk.byteLength));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, bytes }));
    }).on('error', reject);
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
