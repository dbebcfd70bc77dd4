import { AuditApiError, TRANSPORT_ERROR, type GraphQLErrorPayload } from './errors.js';
import type { Operation } from './operations.js';
import { onAbort, untilAborted } from './abort.js';

export interface RetryPolicy {
  /** Total sends of one replayable request, the first included. */
  maxAttempts: number;
  /** Backoff before the second attempt; it doubles per attempt, with jitter. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** Per attempt; a timed-out attempt counts as a transport failure. */
  timeoutMs: number;
}

/**
 * Eight sends, 250 ms doubling to 4 s with jitter: the retries wait 8 to 16 s in all (about 12),
 * so a request outlasts a server restart of a few seconds (an embedded one takes about 4).
 */
export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxAttempts: 8,
  baseDelayMs: 250,
  maxDelayMs: 4_000,
  timeoutMs: 30_000,
};

/** A request's result, the sends it took (the first included) and the HTTP status of its answer. */
export interface Answered<Result> {
  result: Result;
  attempts: number;
  httpStatus: number;
}

export type FetchLike = (url: string, init: RequestInit) => Promise<Response>;

/** As much of an HTTP answer as the transport reads (fetch's Response is one). */
export interface HttpAnswer {
  status: number;
  headers: { get(name: string): string | null };
  text(): Promise<string>;
}

/**
 * Gives the token for the next request: called before each send, so it may cache a token and
 * mint a new one near its `exp`. A request the server refuses as UNAUTHENTICATED asks it once
 * more and is sent again if it then gives another token.
 */
export type TokenProvider = () => string | Promise<string>;

/**
 * POSTs `body` to the client's endpoint; rejects on a network failure, with an error named
 * TimeoutError after `timeoutMs`, or when `signal` aborts (the request is given up: its connection
 * closed).
 */
export type HttpPost = (headers: Record<string, string>, body: string, timeoutMs: number, signal?: AbortSignal) => Promise<HttpAnswer>;

/** An HttpPost through a fetch (the client's `fetch` option). */
export const fetchPost =
  (url: string, fetchImpl: FetchLike): HttpPost =>
  (headers, body, timeoutMs, signal) =>
    fetchImpl(url, { method: 'POST', headers, body, signal: signal ? AbortSignal.any([timeoutSignal(timeoutMs), signal]) : timeoutSignal(timeoutMs) });

/**
 * AbortSignal.timeout's signal, held by its own timer: inside AbortSignal.any, Node may collect an
 * AbortSignal.timeout signal before it fires (nodejs/node#57736), and the request then hangs for
 * ever (a LeaseKeeper's hung renewal was never given up, and the lease ran out).
 */
function timeoutSignal(ms: number): AbortSignal {
  const timeout = new AbortController();
  setTimeout(() => timeout.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')), ms).unref?.();
  return timeout.signal;
}

// Statuses a proxy or load balancer answers with when the server did not (or may not have).
const GATEWAY_STATUSES = new Set([502, 503, 504]);

/** Full jitter over the upper half: spreads retries of many workers without going near zero. */
export function backoffDelayMs(policy: RetryPolicy, failedAttempt: number, random: () => number = Math.random): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (failedAttempt - 1));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

/** POSTs GraphQL over HTTP and retries replayable operations after transport failures and UNAVAILABLE answers. */
export class GraphQLHttpTransport {
  constructor(
    private readonly post: HttpPost,
    private readonly token: string | TokenProvider,
    private readonly policy: RetryPolicy,
  ) {}

  /** The client's policy, or `retry` (for this request) over it. */
  policyOf(retry?: Partial<RetryPolicy>): RetryPolicy {
    return retry ? { ...this.policy, ...retry } : this.policy;
  }

  /**
   * The operation's root field value; `retry` replaces parts of the client's policy for this
   * request. `signal` gives the request up: it rejects with the signal's reason at once, the
   * attempt in flight is cut and no other is made (one already sent may still have committed).
   */
  async execute<Result, Variables>(operation: Operation<Result, Variables>, variables: NoInfer<Variables>, retry?: Partial<RetryPolicy>, signal?: AbortSignal): Promise<Result> {
    return (await this.executeSerialized(operation, JSON.stringify(variables), retry, signal)).result;
  }

  /** As execute, with how many sends it took and the HTTP status of the one answered. */
  async executeAnswered<Result, Variables>(operation: Operation<Result, Variables>, variables: NoInfer<Variables>): Promise<Answered<Result>> {
    return this.executeSerialized(operation, JSON.stringify(variables));
  }

  /** As executeAnswered, with the variables already serialised (the batching writer serialises each event when written). */
  async executeSerialized<Result>(operation: Operation<Result, unknown>, variablesJson: string, retry?: Partial<RetryPolicy>, signal?: AbortSignal): Promise<Answered<Result>> {
    signal?.throwIfAborted();
    return untilAborted(signal, this.attempts(operation, variablesJson, retry, signal));
  }

  private async attempts<Result>(operation: Operation<Result, unknown>, variablesJson: string, retry?: Partial<RetryPolicy>, signal?: AbortSignal): Promise<Answered<Result>> {
    const policy = this.policyOf(retry);
    // Serialised once, so every attempt sends the byte-identical request the server can match as a replay.
    const body = `{"query":${JSON.stringify(operation.document)},"operationName":${JSON.stringify(operation.name)},"variables":${variablesJson}}`;
    const maxAttempts = operation.replayable ? Math.max(1, policy.maxAttempts) : 1;
    // A string is sent without an await: the batching writer counts on a send starting at once.
    let token = typeof this.token === 'string' ? this.token : await this.token();
    let askedForFreshToken = false;
    for (let attempt = 1; ; attempt++) {
      signal?.throwIfAborted();
      try {
        // Whole milliseconds for the timer (a LeaseKeeper's third of a 4 s lease is a fraction).
        return { ...(await this.sendOnce<Result>(operation, body, token, Math.ceil(policy.timeoutMs), signal)), attempts: attempt };
      } catch (error) {
        if (signal?.aborted) throw signal.reason;
        if (!(error instanceof AuditApiError)) throw error;
        // A refused token changed nothing: the provider's newer token (if it has one) gets the
        // request once more, whether or not it is replayable (a token that expired in flight).
        if (error.code === 'UNAUTHENTICATED' && typeof this.token === 'function' && !askedForFreshToken) {
          askedForFreshToken = true;
          const fresh = await this.token();
          if (fresh !== token) {
            token = fresh;
            attempt--;
            continue;
          }
        }
        if (!error.retryable || attempt >= maxAttempts) {
          error.attempts = attempt;
          throw error;
        }
        // A server that says when to come back (UNAVAILABLE's Retry-After) is not asked sooner.
        await sleep(Math.max(backoffDelayMs(policy, attempt), Math.min(error.retryAfterMs ?? 0, policy.maxDelayMs)), signal);
        if (typeof this.token === 'function') token = await this.token();
      }
    }
  }

  private async sendOnce<T>(operation: Operation<T, unknown>, body: string, token: string, timeoutMs: number, signal?: AbortSignal): Promise<{ result: T; httpStatus: number }> {
    const transportFailure = (message: string, retryable: boolean, extra: { httpStatus?: number; cause?: unknown } = {}) =>
      new AuditApiError(`${operation.name}: ${message}`, {
        code: TRANSPORT_ERROR,
        operationName: operation.name,
        retryable,
        ...extra,
      });

    let response: HttpAnswer;
    let text: string;
    try {
      response = await this.post(
        {
          'content-type': 'application/json',
          accept: 'application/graphql-response+json, application/json',
          authorization: `Bearer ${token}`,
        },
        body,
        timeoutMs,
        signal,
      );
      if (GATEWAY_STATUSES.has(response.status)) {
        const unavailable = await unavailableError(response, operation.name);
        if (unavailable) throw unavailable;
        throw transportFailure(`HTTP ${response.status}`, true, { httpStatus: response.status });
      }
      text = await response.text();
    } catch (error) {
      if (error instanceof AuditApiError) throw error;
      const reason = error instanceof Error && error.name === 'TimeoutError' ? 'timed out' : 'network error';
      throw transportFailure(`${reason}: ${error instanceof Error ? error.message : String(error)}`, true, { cause: error });
    }

    let payload: { data?: Record<string, unknown> | null; errors?: GraphQLErrorPayload[] };
    try {
      payload = JSON.parse(text) as typeof payload;
    } catch (error) {
      // A 5xx page that is not JSON came from a proxy or CDN (an HTML 500, a Cloudflare 52x),
      // not from the server: it may not have committed, so it is retried as a gateway's 502 is.
      // A 404 page is the answer of a path the server does not serve: most often a URL without /graphql.
      const hint = response.status === 404 ? " (is the URL the server's GraphQL endpoint, e.g. http://host:4000/graphql?)" : '';
      throw transportFailure(`HTTP ${response.status} with a body that is not JSON${hint}`, response.status >= 500, {
        httpStatus: response.status,
        cause: error,
      });
    }
    const [first] = payload.errors ?? [];
    if (first) {
      throw new AuditApiError(`${operation.name}: ${first.message}`, {
        code: first.extensions?.code ?? 'UNKNOWN',
        operationName: operation.name,
        retryable: false,
        httpStatus: response.status,
        graphqlErrors: payload.errors,
      });
    }
    const result = payload.data?.[operation.field];
    if (result === undefined) {
      throw transportFailure(`HTTP ${response.status} without data.${operation.field}`, false, {
        httpStatus: response.status,
      });
    }
    return { result: result as T, httpStatus: response.status };
  }
}

/**
 * The server's own UNAVAILABLE answer (HTTP 503: the database cannot be reached for the moment),
 * retried as a transport failure is, after its Retry-After; null for a gateway's 5xx, whose body
 * is read and dropped.
 */
async function unavailableError(response: HttpAnswer, operationName: string): Promise<AuditApiError | null> {
  const text = await response.text().catch(() => '');
  if (response.status !== 503) return null;
  let payload: { errors?: GraphQLErrorPayload[] } | undefined;
  try {
    payload = JSON.parse(text) as typeof payload;
  } catch {
    return null;
  }
  const first = payload?.errors?.[0];
  if (first?.extensions?.code !== 'UNAVAILABLE') return null;
  const retryAfter = Number(response.headers.get('retry-after'));
  return new AuditApiError(`${operationName}: ${first.message}`, {
    code: 'UNAVAILABLE',
    operationName,
    retryable: true,
    httpStatus: response.status,
    graphqlErrors: payload!.errors,
    retryAfterMs: Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1000 : undefined,
  });
}

/** Resolves after `ms`, or rejects with the signal's reason as soon as it aborts (its timer cleared: nothing keeps the process alive). */
function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      detach?.();
      resolve();
    }, ms);
    const detach =
      signal &&
      onAbort(signal, () => {
        clearTimeout(timer);
        reject(signal.reason);
      });
  });
}
