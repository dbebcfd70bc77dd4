import http from 'node:http';
import https from 'node:https';
import type { HttpAnswer, HttpPost } from './transport.js';
import { onAbort } from './abort.js';

/**
 * Idle keep-alive connections are closed after this long, before a server's usual 5 s keep-alive
 * closes them under a request (Node's agent shortens it further when the server's Keep-Alive
 * header asks for less).
 */
const IDLE_CONNECTION_MS = 4_000;

/**
 * The client's default HttpPost: Node's own HTTP client over keep-alive connections. A request
 * costs a quarter to a third of the CPU it costs through the global fetch (its WHATWG streams,
 * Request, Response and abort signals), which every agent process pays for its tracer's writes
 * (bench/README.md, runs BC…).
 */
export function nodeHttpPost(url: string): HttpPost {
  const target = new URL(url);
  const secure = target.protocol === 'https:';
  const agent = secure ? new https.Agent({ keepAlive: true, timeout: IDLE_CONNECTION_MS }) : new http.Agent({ keepAlive: true, timeout: IDLE_CONNECTION_MS });
  const request = secure ? https.request : http.request;
  return (headers, body, timeoutMs, signal) =>
    new Promise<HttpAnswer>((resolve, reject) => {
      const sent = request(target, { method: 'POST', agent, headers: { ...headers, 'content-length': Buffer.byteLength(body) } }, (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => {
          settle();
          resolve({ status: response.statusCode ?? 0, headers: { get: (name) => headerValue(response.headers[name.toLowerCase()]) }, text: async () => text });
        });
        response.on('error', fail);
        // Cut before its end (the connection lost, or destroyed by the timeout).
        response.on('close', () => response.complete || fail(new Error('the connection closed before the answer ended')));
      });
      const timer = setTimeout(() => sent.destroy(Object.assign(new Error(`no answer within ${timeoutMs} ms`), { name: 'TimeoutError' })), timeoutMs);
      // Given up: the connection is closed, so it neither keeps the process alive nor is reused.
      const detach = signal && onAbort(signal, () => sent.destroy(Object.assign(new Error('the request was aborted'), { name: 'AbortError' })));
      function settle() {
        clearTimeout(timer);
        detach?.();
      }
      function fail(error: Error) {
        settle();
        reject(error);
      }
      sent.on('error', fail);
      sent.end(body);
    });
}

const headerValue = (value: string | string[] | undefined): string | null => (value === undefined ? null : Array.isArray(value) ? value.join(', ') : value);
