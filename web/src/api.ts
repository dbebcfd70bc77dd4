import { signal } from '@preact/signals';
import { createClient, type Client, type Sink } from 'graphql-ws';
import type { FormattedExecutionResult } from 'graphql';
import type { TypedDocumentString } from './generated/graphql/graphql.js';

const TOKEN_KEY = 'audit-token';

/** The bearer token lives in this tab's sessionStorage only, never in a URL. */
export const storedToken = () => sessionStorage.getItem(TOKEN_KEY);
export const storeToken = (token: string | null) =>
  token ? sessionStorage.setItem(TOKEN_KEY, token) : sessionStorage.removeItem(TOKEN_KEY);

export interface Claims {
  sub: string;
  role: string;
}

/** What the token says about its holder, for display; the server still checks everything. */
export function claimsOf(token: string): Claims | null {
  try {
    // atob gives one character a byte: the JSON is UTF-8, decoded as such for a sub in any script.
    const bytes = Uint8Array.from(atob(token.split('.')[1]!.replace(/-/g, '+').replace(/_/g, '/')), (char) => char.charCodeAt(0));
    const payload = JSON.parse(new TextDecoder().decode(bytes)) as Partial<Claims>;
    return typeof payload.sub === 'string' && typeof payload.role === 'string' ? { sub: payload.sub, role: payload.role } : null;
  } catch {
    return null;
  }
}

export class GraphQLRequestError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
    /** The limit a BAD_USER_INPUT refusal names (extensions.limit), such as 'ANSWER_PAYLOAD_BYTES'. */
    readonly limit?: string,
  ) {
    super(message);
  }
}

/**
 * Reads a list of `count` items, asking for half as many each time the server refuses the answer
 * for carrying more than MAX_ANSWER_PAYLOAD_BYTES of payloads (docs/semantics.md, "Reads"), down
 * to one item: one audit's payloads always fit. The read that resolves is the last one called.
 */
export async function readFewer<T>(count: number, read: (count: number) => Promise<T>): Promise<T> {
  for (;;) {
    try {
      return await read(count);
    } catch (error) {
      if (count <= 1 || !(error instanceof GraphQLRequestError && error.limit === 'ANSWER_PAYLOAD_BYTES')) throw error;
      count = Math.ceil(count / 2);
    }
  }
}

/**
 * The server's message when it refused the page's token (expired, malformed, wrongly signed): the
 * page then asks for a new one. Null while the token is good as far as the page knows.
 */
export const tokenRefusal = signal<string | null>(null);

/**
 * Notes a refusal of the token among a request's or a stream's errors (UNAUTHENTICATED, or a stream
 * ended because its token expired); true when there was one.
 */
function noteTokenRefusal(errors: unknown): boolean {
  type Refusal = { message: string; extensions?: { code?: string; reason?: string } };
  const refused = (Array.isArray(errors) ? errors : [errors]).find((error) => {
    const extensions = (error as Refusal | null)?.extensions;
    return extensions?.code === 'UNAUTHENTICATED' || extensions?.reason === 'TOKEN_EXPIRED';
  }) as Refusal | undefined;
  // A stream's interruption speaks to API clients ("Subscribe again…"); the page signs in again.
  if (refused) tokenRefusal.value = refused.extensions?.reason === 'TOKEN_EXPIRED' ? 'The token has expired.' : refused.message;
  return refused !== undefined;
}

/** What to tell the user of a failed request or stream: an Error's message, or a list of GraphQL errors' messages. */
export function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (Array.isArray(error)) return error.map((item) => messageOf(item)).join('; ');
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === 'string' ? message : String(error);
}

/**
 * The token in what was pasted: `Bearer ` and all whitespace dropped (a token copied from a
 * wrapped terminal holds line breaks; a JWT holds none), or why it is no token.
 */
export function pastedToken(pasted: string): { token: string } | { refusal: string } {
  const token = pasted.trim().replace(/^Bearer\s+/i, '').replace(/\s+/g, '');
  return /^[\w-]+\.[\w-]+\.[\w-]*$/.test(token)
    ? { token }
    : { refusal: 'That is not a token (not a well-formed JWT: three parts of letters, digits, - and _ joined by dots).' };
}

/** A request that could not reach the server (fetch's own "Failed to fetch" says less). */
export const UNREACHABLE = 'The server is unreachable; retrying…';

/** The server cannot serve for the moment (UNAVAILABLE, Retry-After): it is starting (a deploy), or its database is out of reach. */
export const UNAVAILABLE = 'The server is unavailable for the moment; retrying…';

/** The server ended the open thread's stream of changes (it is stopping): it is followed again after the last change shown. */
export const STREAM_ENDED = 'The live stream of changes ended; following again…';

/** How long the page waits before trying a failed read again: `firstMs`, doubled at each failure in a row, at most 15 s. */
export const retryAfterMs = (failures: number, firstMs = 1000) => Math.min(15_000, firstMs * 2 ** failures);

/** A failure of the way to the server, not an answer of it: retried, and over once the server answers. */
export const isTransient = (message: string) =>
  message === UNREACHABLE || message === UNAVAILABLE || message === STREAM_ENDED || message.startsWith('The server answered HTTP ');

/** Counts the server's GraphQL answers (errors included), over HTTP or the live connection: one after a transient failure ends it. */
export const answers = signal(0);

/**
 * Counts an answer of the server; false, not counted, when it says it cannot serve for the moment
 * (UNAVAILABLE): no answer yet, as if it were unreachable, so what an outage left on the banner stays.
 */
function counted(errors: readonly { extensions?: { code?: unknown } }[] | undefined): boolean {
  if (errors?.some((error) => error.extensions?.code === 'UNAVAILABLE')) return false;
  answers.value++;
  return true;
}

/**
 * The server's clock minus this browser's. Leases expire and calls run by the server's (and the
 * runtimes') clocks, and a browser's may be minutes off: the page's clock adds this. Read from each
 * answer's Date header (whole seconds) and the Activity view's `at`; a change under a second is
 * the header's rounding and the way there, not the clocks.
 */
export const serverClockAhead = signal(0);
export function noteServerTime(serverMs: number, localMs = Date.now()) {
  const ahead = serverMs - localMs;
  if (Number.isFinite(ahead) && Math.abs(ahead - serverClockAhead.peek()) > 1000) serverClockAhead.value = ahead;
}

/**
 * The server's GraphQL endpoint, relative to the page: behind a proxy that serves the server under
 * a path prefix (https://example.com/audit/) it is that prefix's, `/audit/graphql`.
 */
export const GRAPHQL_URL = 'graphql';

/** Sends a query from queries.ts: its variables and its result are typed by the document. */
export async function gql<TResult, TVariables>(token: string, document: TypedDocumentString<TResult, TVariables>, variables: TVariables): Promise<TResult> {
  const response = await fetch(GRAPHQL_URL, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query: document.toString(), variables }),
  }).catch(() => {
    throw new Error(UNREACHABLE);
  });
  const body = (await response.json().catch(() => {
    throw new Error(`The server answered HTTP ${response.status}, not GraphQL (a proxy in between?); retrying…`);
  })) as { data?: TResult; errors?: { message: string; extensions?: { code?: string; limit?: string } }[] };
  if (!counted(body.errors)) throw new GraphQLRequestError(UNAVAILABLE, 'UNAVAILABLE');
  // The header's second began up to a second before the server wrote it: its middle, on average.
  const date = response.headers.get('date');
  if (date) noteServerTime(Date.parse(date) + 500);
  const [error] = body.errors ?? [];
  if (error) {
    noteTokenRefusal(body.errors);
    throw new GraphQLRequestError(error.message, error.extensions?.code, error.extensions?.limit);
  }
  return body.data as TResult;
}

/**
 * Follows a subscription from queries.ts. graphql-ws re-sends this same `variables` object on
 * every reconnect, so a caller may update it to resume where it left off. A refused token goes to
 * `tokenRefusal`, not to `sink`.
 */
export function subscribe<TResult, TVariables extends Record<string, unknown>>(
  client: Client,
  document: TypedDocumentString<TResult, TVariables>,
  variables: TVariables,
  sink: Sink<FormattedExecutionResult<TResult>>,
): () => void {
  return client.subscribe({ query: document.toString(), variables }, unlessTokenRefused(sink));
}

/**
 * A query from queries.ts over the page's live connection, for reads a live view repeats (a
 * thread's totals after its changes): one small frame each way instead of an HTTP request with
 * its headers and token and its answer's.
 */
function queryOver<TResult, TVariables extends Record<string, unknown>>(
  client: Client,
  document: TypedDocumentString<TResult, TVariables>,
  variables: TVariables,
): Promise<TResult> {
  return new Promise((resolve, reject) => {
    let answer: FormattedExecutionResult<TResult> | undefined;
    subscribe(client, document, variables, {
      next: (result) => (answer = result),
      error: reject,
      complete: () => {
        const [error] = answer?.errors ?? [];
        if (answer && !counted(answer.errors)) reject(new GraphQLRequestError(UNAVAILABLE, 'UNAVAILABLE'));
        else if (error) reject(new GraphQLRequestError(error.message, error.extensions?.code as string | undefined));
        else if (answer?.data) resolve(answer.data);
        else reject(new Error('The server answered nothing.'));
      },
    });
  });
}

/**
 * A query from queries.ts over the page's live connection, else over HTTP: the connection may not
 * take one more operation (its principal holds every subscription it may: the read would count as one).
 */
export function readOver<TResult, TVariables extends Record<string, unknown>>(
  client: Client,
  token: string,
  document: TypedDocumentString<TResult, TVariables>,
  variables: TVariables,
): Promise<TResult> {
  return queryOver(client, document, variables).catch(() => gql(token, document, variables));
}

/** `sink` for a subscription, but a refused token goes to `tokenRefusal` instead. */
export function unlessTokenRefused<T extends { errors?: readonly unknown[] | null }>(sink: Sink<T>): Sink<T> {
  return {
    next: (result) => void (noteTokenRefusal(result.errors) || sink.next(result)),
    error: (error) => void (noteTokenRefusal(error) || sink.error(error)),
    complete: () => sink.complete(),
  };
}

/** What the page's live connection is doing, as its header shows it. */
export type ConnectionState = 'connecting' | 'live' | 'reconnecting';

/**
 * How long the page waits to hear anything from the server after a ping before it takes the
 * connection for dead and makes a new one. A network gone without a word (Wi-Fi changed, a laptop
 * woken on another network) closes nothing: without this the page said "live" for ever, hearing
 * nothing. Any message counts, not only the pong, so a long catch-up arriving over a slow link,
 * with the pong queued behind it, is not cut.
 */
const SILENCE_MS = 8000;

/** One graphql-ws connection for the page; it retries for ever, so a dropped network heals. */
export function createLiveClient(token: string, onState: (state: ConnectionState) => void): Client {
  const url = new URL(GRAPHQL_URL, document.baseURI).href.replace(/^http/, 'ws');
  let silence: ReturnType<typeof setTimeout> | undefined;
  const heard = () => void (clearTimeout(silence), (silence = undefined));
  const client = createClient({
    url,
    connectionParams: { authorization: `Bearer ${token}` },
    retryAttempts: Infinity,
    shouldRetry: () => true,
    retryWait: async (retries) => new Promise((resolve) => setTimeout(resolve, Math.min(250 * 2 ** retries, 3000))),
    // A ping every 10 s: a dead connection is found within 18 s, and a phone's radio sleeps between pings.
    keepAlive: 10_000,
    on: {
      connected: () => onState('live'),
      // A ping sent: the server answers within SILENCE_MS, or the connection is cut and made again (4499, retried).
      ping: (received) => void (received || (silence ??= setTimeout(() => client.terminate(), SILENCE_MS))),
      message: heard,
      closed: () => (heard(), onState('reconnecting')),
      error: () => onState('reconnecting'),
    },
  });
  return client;
}
