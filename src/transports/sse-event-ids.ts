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

/**
 * yoga's SSE writer, plus an `id:` line for each result that has an event id (a threadChanges
 * cursor): a browser's EventSource then sends it back as Last-Event-ID when it reconnects.
 * The stream ends with its request: when the client goes (the request's signal aborts) or cancels
 * the body, the subscription ends at once, even while it waits for its next event, rather than
 * when the next keep-alive comment finds nobody to write to.
 */
function sseWithEventIds(result: AsyncIterable<ExecutionResult>, fetchAPI: FetchAPI, request: Request): Response {
  const encoder = new fetchAPI.TextEncoder();
  const iterator = result[Symbol.asyncIterator]();
  let ping: NodeJS.Timeout | undefined;
  let ended = false;
  let onClientGone = () => {};
  /** Stops the pings and the subscription; the iterator's `return` also settles a pending `next`. */
  const end = async () => {
    if (ended) return;
    ended = true;
    clearInterval(ping);
    request.signal.removeEventListener('abort', onClientGone);
    await iterator.return?.();
  };
  const body = new fetchAPI.ReadableStream<Uint8Array>({
    start(controller) {
      onClientGone = () => {
        void end();
        controller.close();
      };
      if (request.signal.aborted) return onClientGone();
      request.signal.addEventListener('abort', onClientGone, { once: true });
      // Some browsers wait for a first byte before they report the response.
      controller.enqueue(encoder.encode(':\n\n'));
      ping = setInterval(() => {
        if (controller.desiredSize === null) clearInterval(ping);
        else if (controller.desiredSize > 0) controller.enqueue(encoder.encode(':\n\n'));
      }, PING_MS);
    },
    async pull(controller) {
      if (ended) return;
      const next = await iterator.next();
      if (ended) return; // the client went while this pull waited
      if (next.value != null) {
        const id = eventIdOf(next.value);
        const data = JSON.stringify(withoutInternals(next.value));
        controller.enqueue(encoder.encode(`${id ? `id: ${id}\n` : ''}event: next\ndata: ${data}\n\n`));
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

/** Subscriptions that yoga answers over SSE are written by `sseWithEventIds`. */
export function useSseEventIds(): Plugin {
  const subscriptionRequests = new WeakSet<Request>();
  return {
    onSubscribe({ args }) {
      const request = (args.contextValue as { request?: Request }).request;
      if (request) subscriptionRequests.add(request);
    },
    onResultProcess({ request, result, resultProcessor, setResultProcessor }) {
      // yoga answers a subscription's stream only as SSE: a processor chosen for it is SSE's.
      if (resultProcessor && isAsyncIterable(result) && subscriptionRequests.has(request)) {
        setResultProcessor((stream, fetchAPI) => sseWithEventIds(stream as AsyncIterable<ExecutionResult>, fetchAPI, request), 'text/event-stream');
      }
    },
  };
}
