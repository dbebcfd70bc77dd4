import { request } from 'node:http';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { backendName } from '../support/database.js';
import { onLogLine } from '../../src/log.js';

const LIMIT = 8 * 1024 * 1024;
const TOO_LARGE = { message: `Request body exceeds ${LIMIT} bytes`, extensions: { code: 'BAD_USER_INPUT' } };

let t: TestApp;
let url: string;
let admin: string;
beforeAll(async () => {
  t = await startTestApp();
  url = await t.app.start(0);
  admin = await t.token('ada', 'superadmin');
});
afterAll(() => t.close());

/** `size` bytes of a { __typename } request as JSON, or as a form (its padding a parameter the server ignores). */
function body(size: number, form = false): Buffer {
  const [head, tail] = form ? ['query=%7B__typename%7D&pad=', ''] : ['{"query":"{ __typename }","variables":{"pad":"', '"}}'];
  return Buffer.from(head + 'x'.repeat(size - head.length - tail.length) + tail);
}

/** POSTs `size` bytes of a JSON body (or a form, or a JSON body labelled `contentType`), with a Content-Length or chunked; the status and parsed answer. */
function post(size: number, chunked: boolean, form = false, contentType = form ? 'application/x-www-form-urlencoded' : 'application/json'): Promise<{ status: number; body: any }> {
  const sent = body(size, form);
  return new Promise((resolve, reject) => {
    const req = request(url, {
      method: 'POST',
      headers: {
        'content-type': contentType,
        authorization: `Bearer ${admin}`,
        ...(chunked ? { 'transfer-encoding': 'chunked' } : { 'content-length': String(sent.length) }),
      },
    });
    req.on('response', (response) => {
      let text = '';
      response.on('data', (chunk: Buffer) => (text += chunk.toString()));
      response.on('end', () => resolve({ status: response.statusCode!, body: JSON.parse(text) }));
    });
    // The server may answer and close before the whole body is sent.
    req.on('error', (error: NodeJS.ErrnoException) => (error.code === 'EPIPE' || error.code === 'ECONNRESET' ? undefined : reject(error)));
    for (let offset = 0; offset < sent.length; offset += 64 * 1024) req.write(sent.subarray(offset, offset + 64 * 1024));
    req.end();
  });
}

describe(`HTTP limits (${backendName})`, () => {
  it('one body limit and one error for Content-Length and chunked bodies', async () => {
    const sized = await post(LIMIT + 1024, false);
    const chunked = await post(LIMIT + 1024, true);
    expect(sized.status).toBe(413);
    expect(chunked.status).toBe(413);
    expect(chunked.body.errors[0]).toEqual(sized.body.errors[0]);
    expect(sized.body.errors[0]).toEqual(TOO_LARGE);
  });

  it('a body within the limit is served either way', async () => {
    for (const chunked of [false, true]) {
      const answer = await post(LIMIT - 1024, chunked);
      expect(answer).toEqual({ status: 200, body: { data: { __typename: 'Query' } } });
    }
  });

  it('a form body has the same limit and error as a JSON one, sized or chunked, and is served within it', async () => {
    for (const chunked of [false, true]) {
      expect(await post(LIMIT + 1024, chunked, true), chunked ? 'chunked' : 'sized').toEqual({ status: 413, body: { errors: [TOO_LARGE] } });
      expect(await post(LIMIT - 1024, chunked, true)).toEqual({ status: 200, body: { data: { __typename: 'Query' } } });
    }
  });

  it('a body of a media type the server does not take: 413 when its Content-Length is over the limit, 415 unread when it comes chunked', async () => {
    // Its length is all the server needs to refuse a sized body; a chunked one's size is known only by reading it, which an unsupported one is not.
    expect(await post(LIMIT + 1024, false, false, 'text/plain')).toEqual({ status: 413, body: { errors: [TOO_LARGE] } });
    const chunked = await post(LIMIT + 1024, true, false, 'text/plain');
    expect([chunked.status, chunked.body.errors[0].extensions.code]).toEqual([415, 'BAD_REQUEST']);
  });
});

/** Writes `head` (a request's head and maybe part of its body) on a raw connection; then `leave` ends it or reads the answer. */
function rawRequest(head: string, leave: boolean): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => {
      socket.write(head);
      if (leave) setTimeout(() => (socket.destroy(), resolve('')), 100);
    });
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk.toString()));
    socket.on('end', () => resolve(answer));
    socket.on('error', reject);
  });
}

describe(`malformed and abandoned requests (${backendName})`, () => {
  it('an invalid Content-Length is 400 BAD_REQUEST with a JSON body naming it', async () => {
    const answer = await rawRequest('POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: abc\r\n\r\n{}', false);
    const [head, body] = answer.split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 400 /);
    expect(head!.toLowerCase()).toContain('content-type: application/json');
    expect(JSON.parse(body!).errors[0]).toMatchObject({ extensions: { code: 'BAD_REQUEST' }, message: expect.stringMatching(/Content-Length/) });
  });

  it('a client that leaves before its body is sent is no error of the server: nothing is logged above info', async () => {
    const logged: { level: string; msg: string; aborted?: boolean }[] = [];
    const stopReading = onLogLine((line) => void logged.push(JSON.parse(line)));
    try {
      await rawRequest(`POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer ${admin}\r\nContent-Length: 100\r\n\r\n{"query":`, true);
      await expect.poll(() => logged.find((line) => line.msg === 'request')).toMatchObject({ aborted: true });
      expect(logged.filter((line) => line.level !== 'info')).toEqual([]);
    } finally {
      stopReading();
    }
  });
});

describe(`correlation ids (${backendName})`, () => {
  async function failingRequest(requestId: string) {
    const broken = await startTestApp();
    const token = await broken.token('ada', 'superadmin');
    await broken.loseDatabase(); // every database read now fails, and is masked with the request id
    const logged: { requestId?: string; msg: string }[] = [];
    const stopReading = onLogLine((line) => void logged.push(JSON.parse(line)));
    try {
      const response = await broken.app.yoga.fetch('http://test/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, 'x-request-id': requestId },
        body: JSON.stringify({ query: 'mutation { createThread(input: { title: "x" }) { id } }' }),
      });
      const body = (await response.json()) as { errors: { extensions: { requestId: string } }[] };
      return { requestId: body.errors[0]!.extensions.requestId, logged };
    } finally {
      stopReading();
      await broken.close().catch(() => {});
    }
  }

  it('a short [A-Za-z0-9_-] x-request-id is the correlation id', async () => {
    const { requestId, logged } = await failingRequest('trace-42_ok');
    expect(requestId).toBe('trace-42_ok');
    expect(logged).toContainEqual(expect.objectContaining({ requestId: 'trace-42_ok', msg: 'unexpected error' }));
  });

  it.each([
    ['a forged log line', 'x] ok\n[request admin'],
    ['spaces', 'a b'],
    ['too long', 'a'.repeat(129)],
  ])('%s in x-request-id: a generated id instead', async (_what, forged) => {
    const { requestId, logged } = await failingRequest(forged);
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(logged.filter((entry) => entry.requestId === forged)).toEqual([]);
    expect(logged).toContainEqual(expect.objectContaining({ requestId, msg: 'unexpected error' }));
  });
});
