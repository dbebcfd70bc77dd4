import { AuditApiError, isAuditApiError } from './errors.js';
import { utf8Length } from './json.js';
import { onAbort, untilAborted } from './abort.js';
import { OPERATIONS, type Operation } from './operations.js';
import type { RunStatus } from './generated/graphql/graphql.js';
import type { GraphQLHttpTransport } from './transport.js';

/**
 * The lifecycle events the writer batches, by their key in `LifecycleEventInput`, and the mutation
 * each stands for. Not renewLease: a renewal must not wait behind another run's request in flight
 * (its lease could expire meanwhile), so AuditClient sends it at once, on its own.
 */
const SINGLE = {
  claimRun: OPERATIONS.claimRun,
  modelStarted: OPERATIONS.recordModelStarted,
  modelFinished: OPERATIONS.recordModelFinished,
  toolStarted: OPERATIONS.recordToolStarted,
  toolFinished: OPERATIONS.recordToolFinished,
  toolError: OPERATIONS.recordToolError,
  finishRun: OPERATIONS.finishRun,
} as const;

export type LifecycleEventKind = keyof typeof SINGLE;

/**
 * The most bytes of events (as JSON, in UTF-8) one `recordEvents` request carries. The server
 * refuses a body over max(8 MiB, 4 × MAX_JSON_BYTES) (README, "Limits"), so never one under
 * 8 MiB; the 2 MiB left over covers the request's query text and envelope many times. An event
 * that alone is larger goes alone, as its own mutation, and gets that mutation's answer.
 */
export const MAX_BATCH_BYTES = 6 * 1024 * 1024;

/** What each kind's own mutation answers. */
export type LifecycleEventValue<K extends LifecycleEventKind> = NonNullable<(typeof SINGLE)[K]['types']>['result'];

export interface EventWriterOptions {
  /** Events per request, 1 to 500 (the server's limit). Default 500. */
  maxBatch?: number;
  /** Events queued while a request is in flight before `write` waits for room. Default 2,000. */
  maxQueued?: number;
}

interface Pending {
  kind: LifecycleEventKind;
  /** The input as JSON, serialised once when written: later changes to the caller's objects are not sent. */
  json: string;
  /** Its size in a batch (MAX_BATCH_BYTES). */
  bytes: number;
  /** The caller's: aborted, it stops waiting, and the event is not sent if it has not been. */
  signal: AbortSignal | undefined;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/**
 * One writer of lifecycle events per client, batching by itself: when no request is in flight an
 * event goes at once, as its own mutation (no timer, no added latency); the events that arrive
 * while a request is in flight, and those its answer lets callers write at once, go together in
 * the next one (`recordEvents`), as many as fit in MAX_BATCH_BYTES. Events are sent in
 * the order they were written, one request at a time, so the order within a run is kept. Each
 * event's promise gets its own result, or the AuditApiError its own mutation would have thrown.
 * A claim is an event too: its run's later events carry the epoch its promise resolves to, so
 * they are written after it answers and go in a later request, while other runs' events share its.
 * A full queue makes `write` wait for room; `flush` waits until everything written is answered.
 * A caller's signal bounds its own wait; `abandon` (a shutdown out of time) gives up everything.
 */
export class EventWriter {
  private readonly queue: Pending[] = [];
  private sending = false;
  private readonly roomWaiters: (() => void)[] = [];
  private readonly idleWaiters: (() => void)[] = [];
  private readonly maxBatch: number;
  private readonly maxQueued: number;
  /** Aborted by `abandon`: cuts the request in flight. */
  private abandoned = new AbortController();

  constructor(
    private readonly transport: GraphQLHttpTransport,
    options: EventWriterOptions = {},
  ) {
    this.maxBatch = Math.min(500, Math.max(1, options.maxBatch ?? 500));
    this.maxQueued = Math.max(1, options.maxQueued ?? 2_000);
  }

  /** `input` is the event as `LifecycleEventInput` carries it (claimRun: `{runId, leaseSeconds, claimId}`). */
  /**
   * `input` is the event as `LifecycleEventInput` carries it (claimRun: `{runId, leaseSeconds, claimId}`).
   * `signal` aborted rejects with its reason at once; an event not yet sent is then never sent, one
   * in flight may still be applied (its request is cut only when no other caller waits for it).
   */
  async write<K extends LifecycleEventKind>(kind: K, input: Record<string, unknown>, signal?: AbortSignal): Promise<LifecycleEventValue<K>> {
    const json = JSON.stringify(input);
    const bytes = utf8Length(batchEntry(kind, json));
    signal?.throwIfAborted();
    while (this.queue.length >= this.maxQueued) await untilAborted(signal, new Promise<void>((resolve) => this.roomWaiters.push(resolve)));
    const answer = new Promise<unknown>((resolve, reject) => {
      const event: Pending = { kind, json, bytes, signal, resolve, reject };
      if (signal) {
        const detach = onAbort(signal, () => {
          const queued = this.queue.indexOf(event);
          if (queued >= 0) this.queue.splice(queued, 1);
          reject(signal.reason);
        });
        event.resolve = (value) => (detach(), resolve(value));
        event.reject = (error) => (detach(), reject(error));
      }
      this.queue.push(event);
    });
    if (!this.sending) void this.pump();
    return answer as Promise<LifecycleEventValue<K>>;
  }

  /** Resolves once every event written so far has been answered; `signal` stops waiting (rejecting with its reason). */
  flush(signal?: AbortSignal): Promise<void> {
    if (!this.sending && this.queue.length === 0) return Promise.resolve();
    return untilAborted(signal, new Promise((resolve) => this.idleWaiters.push(resolve)));
  }

  /**
   * Gives up every event not yet answered: those queued are dropped, the request in flight is cut
   * (it may have been applied), each caller rejected with `reason`. The writer stays usable.
   */
  abandon(reason: unknown): void {
    for (const event of this.queue.splice(0)) event.reject(reason);
    this.abandoned.abort(reason);
    this.abandoned = new AbortController();
  }

  private async pump(): Promise<void> {
    this.sending = true;
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.nextBatchLength());
      for (const wake of this.roomWaiters.splice(0, this.maxQueued - this.queue.length)) wake();
      await (batch.length === 1 ? this.sendAlone(batch[0]!) : this.sendBatch(batch));
      // The callers just answered write their next events in the promise jobs that follow (a run's
      // next event waits for its previous one): a turn of the event loop lets those join the next
      // request, where sending at once would take only the events queued before the answer.
      await nextTurn();
    }
    this.sending = false;
    for (const wake of this.idleWaiters.splice(0)) wake();
  }

  /** How many of the queued events the next request takes: at least one, at most maxBatch, within MAX_BATCH_BYTES. */
  private nextBatchLength(): number {
    let length = 1;
    let bytes = this.queue[0]!.bytes;
    for (; length < Math.min(this.maxBatch, this.queue.length); length++) {
      bytes += this.queue[length]!.bytes;
      if (bytes > MAX_BATCH_BYTES) break;
    }
    return length;
  }

  /** The mutation an event is when sent alone, and its variables. */
  static operationOf(kind: LifecycleEventKind): Operation<unknown, Record<string, unknown>> {
    return SINGLE[kind] as Operation<unknown, Record<string, unknown>>;
  }

  private async sendAlone(event: Pending): Promise<void> {
    await this.sendRequest([event], (signal) => this.transport.executeSerialized(EventWriter.operationOf(event.kind), `{"input":${event.json}}`, undefined, signal)).then(
      ({ result }) => event.resolve(result),
      event.reject,
    );
  }

  /**
   * Sends the batch's request with a signal that aborts when the writer is abandoned, or once
   * every event of it was given up by its caller (an event still waited for keeps it going).
   */
  private async sendRequest<Result>(batch: Pending[], send: (signal: AbortSignal) => Promise<Result>): Promise<Result> {
    const signals = new Set(batch.map((event) => event.signal));
    if (signals.has(undefined)) return send(this.abandoned.signal);
    const callers = [...signals] as AbortSignal[];
    const givenUp = new AbortController();
    const detaches = callers.map((signal) => onAbort(signal, () => callers.every((each) => each.aborted) && givenUp.abort(signal.reason)));
    try {
      return await send(AbortSignal.any([givenUp.signal, this.abandoned.signal]));
    } finally {
      for (const detach of detaches) detach();
    }
  }

  private async sendBatch(batch: Pending[]): Promise<void> {
    let answered;
    try {
      // The input is @oneOf: one key per event, checked by the server.
      const events = batch.map(({ kind, json }) => batchEntry(kind, json)).join(',');
      answered = await this.sendRequest(batch, (signal) => this.transport.executeSerialized(OPERATIONS.recordEvents, `{"events":[${events}]}`, undefined, signal));
    } catch (error) {
      if (isAuditApiError(error, 'BAD_USER_INPUT')) {
        // A value its type refuses (an observedAt of "yesterday", a sequence of "12abc") makes
        // the server refuse the whole request before applying any event. Sent alone, each event
        // gets its own mutation's answer, so one caller's bad value fails only its own call;
        // one at a time, in the order written, so each run's events keep their order.
        for (const event of batch) await this.sendAlone(event);
        return;
      }
      // The whole request failed (after its retries): every event of it gets that error.
      for (const event of batch) event.reject(error);
      return;
    }
    const { result: results, ...request } = answered;
    const unapplied: Pending[] = [];
    for (const [index, event] of batch.entries()) {
      const result = results[index];
      if (!result) event.reject(new AuditApiError(`recordEvents: no result for event ${index}`, { code: 'INTERNAL_SERVER_ERROR', operationName: SINGLE[event.kind].name, retryable: false }));
      else if (result.error?.code === 'UNAVAILABLE') unapplied.push(event);
      else if (result.error) event.reject(eventError(SINGLE[event.kind], result.error, request));
      else event.resolve(result.audit ?? result.run ?? result.lease);
    }
    // The batch's tail the server left unapplied (a later call of it failed for the moment after
    // earlier ones committed) goes again, before anything written since: each run keeps its order.
    if (unapplied.length) await (unapplied.length === 1 ? this.sendAlone(unapplied[0]!) : this.sendBatch(unapplied));
  }
}

/** An event as `LifecycleEventInput` carries it in a batch, as JSON. */
const batchEntry = (kind: LifecycleEventKind, json: string) => `{"${kind}":${json}}`;

/** Resolves after the promise jobs queued so far have run (Node's check phase; a zero timeout elsewhere). */
const nextTurn = () => new Promise<void>((resolve) => (typeof setImmediate === 'function' ? setImmediate(resolve) : setTimeout(resolve, 0)));

/**
 * A refused event's error, as its own mutation would have thrown it, with the batch request's
 * sends and HTTP status: a LEASE_LOST after more than one send may mean the first one committed.
 */
function eventError(
  { name: operationName, field }: { name: string; field: string },
  error: { code: string; message: string; runStatus?: RunStatus | null },
  request: { attempts: number; httpStatus: number },
): AuditApiError {
  const refused = new AuditApiError(`${operationName}: ${error.message}`, {
    code: error.code,
    operationName,
    retryable: false,
    httpStatus: request.httpStatus,
    // The result (LifecycleEventError) carries what its own mutation's extensions would; the path is its root field's.
    graphqlErrors: [{ message: error.message, path: [field], extensions: { code: error.code, ...(error.runStatus && { runStatus: error.runStatus }) } }],
  });
  refused.attempts = request.attempts;
  return refused;
}
