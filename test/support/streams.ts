import { createClient, type Client } from 'graphql-ws';
import { onTestFinished } from 'vitest';
import WebSocket from 'ws';
import type { Topic } from '../../src/realtime/pubsub.js';
import type { App } from '../../src/server/app.js';
import type { GraphQLResponse } from './app.js';

/** Polls `read` until `done` holds for its value; fails naming `what` and the last value after `timeoutMs`. */
export async function eventually<T>(
  read: () => T | Promise<T>,
  done: (value: T) => boolean,
  { timeoutMs = 15_000, what = 'the condition', intervalMs = 50 } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}; last value: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** Polls in-process state until `condition` holds; fails naming `what` after `timeoutMs`. */
export async function waitFor(condition: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  await eventually(condition, (holds) => holds, { timeoutMs, what, intervalMs: 10 });
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

  /** The results once `holds` is true of them; fails if the stream ends first, or after `timeoutMs`. */
  async until(holds: (results: GraphQLResponse[]) => boolean, what: string, timeoutMs?: number): Promise<GraphQLResponse[]> {
    await waitFor(() => holds(this.results) || this.ending !== null, `${what} on ${this.label}`, timeoutMs);
    if (!holds(this.results)) {
      throw new Error(`${this.label} ended (${JSON.stringify(this.ending)}) before ${what}: ${JSON.stringify(this.results)}`);
    }
    return this.results;
  }

  /** The first `n` results, once they are there. */
  async take(n: number, timeoutMs?: number): Promise<GraphQLResponse[]> {
    return (await this.until((results) => results.length >= n, `${n} results`, timeoutMs)).slice(0, n);
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

/** Waits until every stream holds `n` results and returns each stream's payloads under `field`. */
export async function delivered(streams: Stream[], n: number, field: string): Promise<any[][]> {
  return Promise.all(streams.map(async (stream) => payloads(await stream.take(n), field)));
}

/** A graphql-ws client on a real socket, authenticated the contract's way (connectionParams). */
export function wsClient(url: string, token?: string | null): Client {
  return createClient({
    url: url.replace(/^http/, 'ws'),
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

/** A subscription over its own graphql-ws connection to `url`; closing it closes the connection. */
export function subscribeWs(url: string, query: string, variables: Record<string, unknown>, token?: string | null): Stream {
  const client = wsClient(url, token);
  return subscribeOn(client, query, variables, () => client.dispose());
}

/**
 * Starts a GraphQL-over-SSE subscription (yoga's distinct-connections mode): in process through
 * yoga's fetch when given the app, over HTTP when given its URL.
 */
export function sseResponse(target: App | string, query: string, variables: Record<string, unknown>, token?: string | null, signal?: AbortSignal) {
  const init = {
    method: 'POST',
    signal,
    headers: {
      'content-type': 'application/json',
      accept: 'text/event-stream',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: JSON.stringify({ query, variables }),
  };
  return typeof target === 'string' ? fetch(target, init) : target.yoga.fetch('http://test/graphql', init);
}

export interface SseEvent {
  event?: string;
  id?: string;
  data?: string;
  /** Its comment lines' text, if any (a keep-alive's has none). */
  comment?: string;
}

function parseEvent(block: string): SseEvent {
  const fields: SseEvent = {};
  for (const line of block.split('\n')) {
    if (line.startsWith('event:')) fields.event = line.slice(6).trim();
    else if (line.startsWith('id:')) fields.id = line.slice(3).trim();
    else if (line.startsWith('data:')) fields.data = (fields.data ?? '') + line.slice(5).trim();
    else if (line.startsWith(':') && line.slice(1).trim()) fields.comment = (fields.comment ?? '') + line.slice(1).trim();
  }
  return fields;
}

/**
 * An SSE body's events as they arrive, read chunk by chunk; `afterChunk` runs after each chunk's
 * events (a slow reader pauses there, and the server's stream is pulled only that fast).
 */
export async function* sseEvents(reader: ReadableStreamDefaultReader<Uint8Array>, afterChunk?: () => Promise<unknown>): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder();
  let buffered = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffered += decoder.decode(value, { stream: true });
    let boundary: number;
    while ((boundary = buffered.indexOf('\n\n')) >= 0) {
      const block = buffered.slice(0, boundary);
      buffered = buffered.slice(boundary + 2);
      yield parseEvent(block);
    }
    await afterChunk?.();
  }
}

/** Reads an SSE body into `stream` as it arrives. */
async function readSse(stream: Stream, reader: ReadableStreamDefaultReader<Uint8Array>): Promise<void> {
  try {
    for await (const { event, data } of sseEvents(reader)) {
      if (event === 'next' && data) stream.add(JSON.parse(data));
      if (event === 'complete') stream.end({ kind: 'complete' });
    }
    stream.end({ kind: 'error', error: new Error('the event stream ended without `complete`') });
  } catch (error) {
    stream.end({ kind: 'error', error });
  }
}

/**
 * Reads an SSE subscription's results as they arrive. Closing it goes as a client goes: it aborts
 * the request (`client`, whose signal the request was made with), then cancels the body.
 */
export function sseStream(response: Response, client?: AbortController): Stream {
  if (response.status !== 200 || !response.body) throw new Error(`SSE subscription refused: ${response.status}`);
  const reader = response.body.getReader();
  const stream = new Stream('SSE', () => {
    client?.abort();
    return reader.cancel().catch(() => {});
  });
  void readSse(stream, reader);
  return stream;
}

/** An SSE subscription (see `sseResponse`) whose results are read as they arrive. */
export async function subscribeSse(target: App | string, query: string, variables: Record<string, unknown>, token?: string | null): Promise<Stream> {
  const client = new AbortController();
  return sseStream(await sseResponse(target, query, variables, token, client.signal), client);
}

/**
 * The same subscription over graphql-ws (when the app listens on `url`) and over SSE, closed when
 * the test finishes. Returns once the app's pub/sub counts them (with Redis, once Redis acknowledged
 * the channel): from then on, every instance's events arrive.
 */
export async function subscribeLive(
  app: App,
  url: string | null,
  topic: Topic,
  query: string,
  variables: { threadId: string } & Record<string, unknown>,
  token: string,
): Promise<Stream[]> {
  const { threadId } = variables;
  const before = app.pubsub.subscriberCount(topic, threadId);
  const streams = [...(url ? [subscribeWs(url, query, variables, token)] : []), await subscribeSse(app, query, variables, token)];
  for (const stream of streams) onTestFinished(() => stream.close());
  await waitFor(() => app.pubsub.subscriberCount(topic, threadId) === before + streams.length, 'the subscriptions to be live');
  return streams;
}

/** A thread's runs and audits as a dashboard reads them before it subscribes with `after: cursor`. */
export const THREAD_SNAPSHOT = `query($threadId: ID!) {
  thread(id: $threadId) { changeCursor runs { id status } }
  threadAudits(threadId: $threadId) { cursor items { id status } }
}`;

/** One threadChanges delivery, as the tests select it. */
export interface ThreadChange {
  cursor: string;
  audit: { id: string; status: string } | null;
  run: { id: string; status: string } | null;
}

/** Cursors are opaque to clients; the tests read their counter to check order and completeness. */
export const counterOf = (cursor: string) =>
  cursor.includes('.') ? BigInt(cursor.split('.')[1]!) : BigInt(Buffer.from(cursor, 'base64url').toString().split(':')[1]!);
