import { isAsyncIterable } from '@envelop/core';
import type { ExecutionResult } from 'graphql';
import type { FetchAPI, Plugin } from 'graphql-yoga';
import { eventIdOf } from './shared-subscriptions.js';

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
function sseWithEventIds(result: AsyncIterable<ExecutionResult>, fetchAPI: FetchAPI, request: Request, signedOut: AbortSignal | undefined): Response {
  const encoder = new fetchAPI.TextEncoder();
  const iterator = result[Symbol.asyncIterator]();
  let ping: NodeJS.Timeout | undefined;
  let ended = false;
  let onClientGone = () => {};
  let onSignedOut = () => {};
  /** Stops the pings and the subscription; the iterator's `return` also settles a pending `next`. */
  const end = async () => {
    if (ended) return;
    ended = true;
    clearInterval(ping);
    request.signal.removeEventListener('abort', onClientGone);
    signedOut?.removeEventListener('abort', onSignedOut);
    await iterator.return?.();
  };
  const body = new fetchAPI.ReadableStream<Uint8Array>({
    start(controller) {
      onClientGone = () => {
        void end();
        controller.close();
      };
      onSignedOut = () => {
        if (ended) return;
        controller.enqueue(encoder.encode(SIGNED_OUT_EVENTS));
        void end();
        controller.close();
      };
      if (request.signal.aborted) return onClientGone();
      request.signal.addEventListener('abort', onClientGone, { once: true });
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
      if (ended) return;
      const next = await iterator.next();
      if (ended) return; // the client went while this pull waited
      if (next.value != null) controller.enqueue(nextEvent(next.value, encoder));
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

/** Subscriptions that yoga answers over SSE are written by `sseWithEventIds`. */
export function useSseEventIds(): Plugin {
  /** Each subscription request's stream session sign-out, if it has one. */
  const subscriptionRequests = new WeakMap<Request, AbortSignal | undefined>();
  return {
    onSubscribe({ args }) {
      const { request, signedOut } = args.contextValue as { request?: Request; signedOut?: AbortSignal };
      if (request) subscriptionRequests.set(request, signedOut);
    },
    onResultProcess({ request, result, resultProcessor, setResultProcessor }) {
      // yoga answers a subscription's stream only as SSE: a processor chosen for it is SSE's.
      if (resultProcessor && isAsyncIterable(result) && subscriptionRequests.has(request)) {
        const signedOut = subscriptionRequests.get(request);
        setResultProcessor((stream, fetchAPI) => sseWithEventIds(stream as AsyncIterable<ExecutionResult>, fetchAPI, request, signedOut), 'text/event-stream');
      }
    },
  };
}
