import type { ServerResponse } from 'node:http';
import { isAsyncIterable } from '@envelop/core';
import type { ExecutionResult } from 'graphql';
import type { FetchAPI, Plugin } from 'graphql-yoga';
import type { GraphQLContext } from '../graphql/context.js';
import { eventIdOf } from './shared-subscriptions.js';
import { cutUnlessClosed, type UnsentBudget } from './unsent-budget.js';

/** As yoga: an error's `http` and `unexpected` extensions are the server's, not the client's. */
function withoutInternals(result: ExecutionResult) {
  if (!result.errors?.length) return result;
  const errors = result.errors.map((error) => {
    const { http: _http, unexpected: _unexpected, ...extensions } = error.extensions ?? {};
    return { ...error.toJSON(), extensions: Object.keys(extensions).length ? extensions : undefined };
  });
  return { ...result, errors };
}

/** yoga's keep-alive comment interval for SSE. */
export const PING_MS = 12_000;

/** The last event of a stream whose session signed out, as a token's expiry ends one. */
const SIGNED_OUT_EVENTS = `event: next\ndata: ${JSON.stringify({
  errors: [
    {
      message: 'The stream session was signed out. Sign in again (POST /graphql/stream-session) to subscribe.',
      extensions: { code: 'SUBSCRIPTION_INTERRUPTED', reason: 'SIGNED_OUT' },
    },
  ],
})}\n\nevent: complete\ndata:\n\n`;

/**
 * The last words of a stream ended as a slow consumer (its principal's streams held too much
 * unsent): a comment, which clients ignore, and no `complete`, so that every client takes it as
 * a dropped connection and resumes (an EventSource by itself, with Last-Event-ID).
 */
export const SLOW_CONSUMER_COMMENT =
  ': slow consumer: this principal\'s streams hold too much unsent data; reconnect with Last-Event-ID (your last cursor) to resume\n\n';

/** An SSE response counted against its principal's budget of unsent bytes. */
interface Budgeted {
  budget: UnsentBudget;
  res: ServerResponse;
  sub: string;
}

/**
 * Each result's `next` event, encoded once: a group of identical subscriptions shares one result
 * object (shared-subscriptions.ts), so its streams write the same bytes rather than a copy each.
 */
const encodedEvents = new WeakMap<ExecutionResult, Uint8Array>();

function nextEvent(result: ExecutionResult, encoder: TextEncoder): Uint8Array {
  let bytes = encodedEvents.get(result);
  if (bytes === undefined) {
    const id = eventIdOf(result);
    bytes = encoder.encode(`${id ? `id: ${id}\n` : ''}event: next\ndata: ${JSON.stringify(withoutInternals(result))}\n\n`);
    encodedEvents.set(result, bytes);
  }
  return bytes;
}

/**
 * yoga's SSE writer, plus an `id:` line for each result that has an event id (a threadChanges
 * cursor): a browser's EventSource then sends it back as Last-Event-ID when it reconnects.
 * The stream ends with its request: when the client goes (the request's signal aborts) or cancels
 * the body, the subscription ends at once, even while it waits for its next event, rather than
 * when the next keep-alive comment finds nobody to write to. So does a stream whose session signs
 * out (`signedOut`), after SIGNED_OUT_EVENTS.
 */
function sseWithEventIds(
  result: AsyncIterable<ExecutionResult>,
  fetchAPI: FetchAPI,
  request: Request,
  signedOut: AbortSignal | undefined,
  budgeted: Budgeted | undefined,
): Response {
  const encoder = new fetchAPI.TextEncoder();
  const iterator = result[Symbol.asyncIterator]();
  let ping: NodeJS.Timeout | undefined;
  let ended = false;
  let closeBody = () => {};
  const onClientGone = () => {
    void end();
    closeBody();
  };
  let onSignedOut = () => {};
  let onSlow = () => {};
  /**
   * What the stream says last, once its session signed out or it was ended as a slow consumer:
   * the next pull writes it and closes. Each pull has its own controller, whose bytes are handed on
   * when the pull returns: written from elsewhere, these words could overtake a pull's event, or
   * be followed by it after the end.
   */
  let lastWords: string | null = null;
  const sayLastWords = (controller: ReadableStreamDefaultController<Uint8Array>) => {
    controller.enqueue(encoder.encode(lastWords!));
    controller.close();
  };
  let release = () => {};
  /**
   * Bytes of the event enqueued last that the response has not taken yet: the body is pulled
   * again only once the response took (nearly) all of it, so an unread stream holds at most that
   * and what its response holds.
   */
  let queued = 0;
  /** Stops the pings and the subscription; the iterator's `return` also settles a pending `next`. */
  const end = async () => {
    if (ended) return;
    ended = true;
    clearInterval(ping);
    release();
    request.signal.removeEventListener('abort', onClientGone);
    signedOut?.removeEventListener('abort', onSignedOut);
    await iterator.return?.();
  };
  // From now, not from the body's start: the body of a response whose client is gone is never
  // read (whatwg-node sends nothing on a closed response), so it never starts, nor is it cancelled.
  if (request.signal.aborted) void end();
  else request.signal.addEventListener('abort', onClientGone, { once: true });
  const body = new fetchAPI.ReadableStream<Uint8Array>({
    start(controller) {
      closeBody = () => controller.close();
      if (ended) return controller.close();
      onSignedOut = () => {
        if (ended) return;
        lastWords = SIGNED_OUT_EVENTS;
        void end();
      };
      onSlow = () => {
        if (ended) return;
        lastWords = SLOW_CONSUMER_COMMENT;
        void end();
        const { res } = budgeted!;
        cutUnlessClosed(res, () => (res.socket ? res.socket.resetAndDestroy() : res.destroy()));
      };
      if (budgeted) {
        const { budget, res, sub } = budgeted;
        release = budget.track(res, sub, { transport: 'sse', unsent: () => res.writableLength + queued, end: () => onSlow() });
        res.on('drain', () => budget.drained(res));
      }
      // Some browsers wait for a first byte before they report the response.
      controller.enqueue(encoder.encode(':\n\n'));
      if (signedOut?.aborted) return onSignedOut();
      signedOut?.addEventListener('abort', onSignedOut, { once: true });
      ping = setInterval(() => {
        if (controller.desiredSize === null) clearInterval(ping);
        else if (controller.desiredSize > 0) controller.enqueue(encoder.encode(':\n\n'));
      }, PING_MS);
    },
    async pull(controller) {
      queued = 0;
      if (lastWords) return sayLastWords(controller);
      if (ended) return;
      const next = await iterator.next();
      if (lastWords) return sayLastWords(controller);
      if (ended) return; // the client went while this pull waited
      if (next.value != null) {
        const bytes = nextEvent(next.value, encoder);
        controller.enqueue(bytes);
        queued = bytes.byteLength;
        // The response still holds earlier bytes: its client may not be reading.
        if (budgeted && budgeted.res.writableLength > 0) budgeted.budget.wrote(budgeted.res);
      }
      if (next.done) {
        controller.enqueue(encoder.encode('event: complete\ndata:\n\n'));
        await end();
        controller.close();
      }
    },
    cancel: end,
  });
  return new fetchAPI.Response(body, {
    headers: { 'Content-Type': 'text/event-stream', Connection: 'keep-alive', 'Cache-Control': 'no-cache', 'Content-Encoding': 'none' },
  });
}

/**
 * Subscriptions that yoga answers over SSE are written by `sseWithEventIds`; those of a principal
 * answered on a Node response count against its budget of unsent bytes (`budget`).
 */
export function useSseEventIds(budget?: UnsentBudget): Plugin<GraphQLContext & { res?: ServerResponse }> {
  /** Each subscription request's stream session sign-out, if it has one, and its budget. */
  const subscriptionRequests = new WeakMap<Request, { signedOut: AbortSignal | undefined; budgeted: Budgeted | undefined }>();
  return {
    onSubscribe({ args }) {
      const { request, signedOut, res, principal } = args.contextValue;
      if (!request) return;
      const budgeted = budget && res?.writableLength !== undefined && principal ? { budget, res, sub: principal.sub } : undefined;
      subscriptionRequests.set(request, { signedOut, budgeted });
    },
    onResponse({ response }) {
      // Every event stream, this module's or yoga's: nginx would read it faster than a stalled client
      // does and spool it to its disk (up to 1 GB); unbuffered, a stream is written only as fast as
      // its client reads, as without a proxy (docs/subscriptions.md, "A subscriber that falls behind").
      if (response.headers.get('content-type')?.startsWith('text/event-stream')) response.headers.set('x-accel-buffering', 'no');
    },
    onResultProcess({ request, result, resultProcessor, setResultProcessor }) {
      // yoga answers a subscription's stream only as SSE: a processor chosen for it is SSE's.
      const subscription = subscriptionRequests.get(request);
      if (resultProcessor && isAsyncIterable(result) && subscription) {
        const { signedOut, budgeted } = subscription;
        setResultProcessor(
          (stream, fetchAPI) => sseWithEventIds(stream as AsyncIterable<ExecutionResult>, fetchAPI, request, signedOut, budgeted),
          'text/event-stream',
        );
      }
    },
  };
}
