import net from 'node:net';
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import type { App } from '../../src/server/app.js';
import type { GraphQLResponse } from '../support/app.js';

/** The Redis the suites fan out through when TEST_REDIS_URL is set (in-process pub/sub otherwise). */
export const testRedisUrl = process.env.TEST_REDIS_URL || undefined;
export const redisEnv = (): Record<string, string> => (testRedisUrl ? { REDIS_URL: testRedisUrl } : {});

/** Polls `condition` until it holds; fails naming `what` after `timeoutMs`. */
export async function waitFor(condition: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

export type Ending = { kind: 'complete' } | { kind: 'error'; error: unknown };

/** What one subscription delivered, and how it ended. */
export class Stream {
  readonly results: GraphQLResponse[] = [];
  ending: Ending | null = null;

  constructor(
    readonly label: string,
    private readonly stop: () => unknown,
  ) {}

  add(result: GraphQLResponse): void {
    this.results.push(result);
  }

  end(ending: Ending): void {
    this.ending ??= ending;
  }

  /** The first `n` results, once they are there. */
  async take(n: number, timeoutMs?: number): Promise<GraphQLResponse[]> {
    await waitFor(() => this.results.length >= n || this.ending !== null, `${n} results on ${this.label}`, timeoutMs);
    if (this.results.length < n) {
      throw new Error(`${this.label} ended (${JSON.stringify(this.ending)}) after ${JSON.stringify(this.results)}`);
    }
    return this.results.slice(0, n);
  }

  async ended(timeoutMs?: number): Promise<Ending> {
    await waitFor(() => this.ending !== null, `the end of ${this.label}`, timeoutMs);
    return this.ending!;
  }

  async close(): Promise<void> {
    await this.stop();
  }
}

/** The data of each result under `field`, failing on a result with errors. */
export function payloads(results: GraphQLResponse[], field: string): any[] {
  return results.map((result) => {
    if (result.errors?.length || !result.data) throw new Error(`Expected data, got ${JSON.stringify(result)}`);
    return result.data[field];
  });
}

export const wsUrlOf = (httpUrl: string) => httpUrl.replace(/^http/, 'ws');

/** A graphql-ws client on a real socket, authenticated the contract's way (connectionParams). */
export function wsClient(url: string, token?: string | null): Client {
  return createClient({
    url: wsUrlOf(url),
    webSocketImpl: WebSocket,
    retryAttempts: 0,
    connectionParams: token ? { authorization: `Bearer ${token}` } : {},
  });
}

/** One subscription over `client`; closing it unsubscribes, then runs `onClose`. */
export function subscribeOn(
  client: Client,
  query: string,
  variables: Record<string, unknown>,
  onClose: () => unknown = () => {},
): Stream {
  let unsubscribe = () => {};
  const stream = new Stream('graphql-ws', async () => {
    unsubscribe();
    await onClose();
  });
  unsubscribe = client.subscribe(
    { query, variables },
    {
      next: (result) => stream.add(result as GraphQLResponse),
      error: (error) => stream.end({ kind: 'error', error }),
      complete: () => stream.end({ kind: 'complete' }),
    },
  );
  return stream;
}

/** A subscription over its own graphql-ws connection; closing it closes the connection. */
export function subscribeWs(url: string, query: string, variables: Record<string, unknown>, token?: string | null): Stream {
  const client = wsClient(url, token);
  return subscribeOn(client, query, variables, () => client.dispose());
}

function parseEvent(block: string): { event?: string; data?: string } {
  const fields: { event?: string; data?: string } = {};
  for (const line of block.split('\n')) {
    if (line.startsWith('event:')) fields.event = line.slice(6).trim();
    else if (line.startsWith('data:')) fields.data = (fields.data ?? '') + line.slice(5).trim();
  }
  return fields;
}

/** Reads a GraphQL-over-SSE body (yoga's distinct-connections mode) into `stream`. */
async function readSse(stream: Stream, reader: ReadableStreamDefaultReader<Uint8Array>): Promise<void> {
  const decoder = new TextDecoder();
  let buffered = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffered += decoder.decode(value, { stream: true });
      let boundary: number;
      while ((boundary = buffered.indexOf('\n\n')) >= 0) {
        const { event, data } = parseEvent(buffered.slice(0, boundary));
        buffered = buffered.slice(boundary + 2);
        if (event === 'next' && data) stream.add(JSON.parse(data));
        if (event === 'complete') stream.end({ kind: 'complete' });
      }
    }
    stream.end({ kind: 'error', error: new Error('the event stream ended without `complete`') });
  } catch (error) {
    stream.end({ kind: 'error', error });
  }
}

/** Starts an SSE subscription in process (yoga's fetch, `Accept: text/event-stream`). */
export async function sseResponse(app: App, query: string, variables: Record<string, unknown>, token?: string | null) {
  return app.yoga.fetch('http://test/graphql', {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'text/event-stream',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: JSON.stringify({ query, variables }),
  });
}

/** Reads an SSE subscription's results as they arrive. */
export function sseStream(response: Response): Stream {
  if (!response.body) throw new Error(`SSE response without a body (${response.status})`);
  const reader = response.body.getReader();
  const stream = new Stream('SSE', () => reader.cancel().catch(() => {}));
  void readSse(stream, reader);
  return stream;
}

/** An SSE subscription whose results are read as they arrive. */
export async function subscribeSse(app: App, query: string, variables: Record<string, unknown>, token?: string | null): Promise<Stream> {
  return sseStream(await sseResponse(app, query, variables, token));
}

/**
 * A TCP proxy in front of `target`, to play a network that misbehaves: `stall` stops reading
 * from the target (a client that stops reading), `cut` drops every connection and refuses new
 * ones (an outage), `restore` listens again on the same port.
 */
export async function tcpProxy(target: { host: string; port: number }) {
  const pairs = new Set<{ client: net.Socket; upstream: net.Socket }>();
  let stalled = false;
  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host);
    const pair = { client, upstream };
    pairs.add(pair);
    const drop = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.pipe(upstream);
    if (stalled) upstream.pause();
    else upstream.pipe(client);
  });
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port));
    });
  const port = await listen(0);
  return {
    port,
    url: (scheme: string) => `${scheme}://127.0.0.1:${port}`,
    stall() {
      stalled = true;
      for (const { client, upstream } of pairs) {
        upstream.unpipe(client);
        upstream.pause();
      }
    },
    resume() {
      stalled = false;
      for (const { client, upstream } of pairs) upstream.pipe(client);
    },
    async cut() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const { client, upstream } of pairs) {
        client.destroy();
        upstream.destroy();
      }
      pairs.clear();
      await closed;
    },
    async restore() {
      await listen(port);
    },
    async close() {
      for (const { client, upstream } of pairs) {
        client.destroy();
        upstream.destroy();
      }
      if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
