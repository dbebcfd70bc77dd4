import { PROCESS_CLOCK_ID, readClock, toBigIntString, toClockInput } from './clock.js';
import { onAbort } from './abort.js';
import { AuditApiError } from './errors.js';
import { EventWriter, type EventWriterOptions, type LifecycleEventKind, type LifecycleEventValue } from './event-writer.js';
import { capJson, DEFAULT_MAX_JSON_BYTES, toJson } from './json.js';
import type { JsonValue } from './json-value.js';
import { OPERATIONS } from './operations.js';
import { settlingMessages } from './state-messages.js';
import { nodeHttpPost } from './node-http.js';
import { DEFAULT_RETRY_POLICY, fetchPost, GraphQLHttpTransport, type FetchLike, type RetryPolicy, type TokenProvider } from './transport.js';
import type {
  AppendMessageInput,
  BigIntLike,
  CreateRunInput,
  CreateThreadInput,
  DeletionReceipt,
  FinishRunInput,
  LeaseInput,
  Message,
  ModelAudit,
  ModelFinishedInput,
  ModelStartedInput,
  Observation,
  Run,
  RunDetails,
  RunLease,
  Thread,
  ThreadAudits,
  ToolAudit,
  ToolErrorInput,
  ToolFinishedInput,
  ToolStartedInput,
} from './types.js';

export interface AuditClientOptions {
  /** The GraphQL endpoint, e.g. http://127.0.0.1:4000/graphql. */
  url: string;
  /**
   * A JWT sent as `Authorization: Bearer <token>`, or a function giving it before each request
   * (a short-lived token renewed by your identity service: TokenProvider).
   */
  token: string | TokenProvider;
  /** Id of the monotonic clock the filled-in readings come from; defaults to this process's. */
  clockId?: string;
  /** Sends the requests through this fetch (tests, proxies) instead of Node's HTTP client (node-http.ts). */
  fetch?: FetchLike;
  retry?: Partial<RetryPolicy>;
  /**
   * Lifecycle events (claimRun to finishRun; not renewLease, sent at once) go through one writer
   * that batches by itself (event-writer.ts): on by default; `false` sends each as its own request.
   */
  batching?: boolean | EventWriterOptions;
  /**
   * The server's MAX_JSON_BYTES (default 1 MiB, the server's default). A payload (a model's input,
   * output, error or usage, a declared call's args, a tool's input, output or error, a run's error
   * or state message) larger than this as JSON is sent truncated, with a visible marker (README,
   * "Payloads"): the server would refuse the whole event.
   */
  maxJsonBytes?: number;
}

/**
 * What every call takes besides its input. `signal` bounds the wait (a worker's shutdown, a
 * request's AbortSignal): once it aborts the call rejects with its reason, a lifecycle event not
 * yet sent is never sent, and no retry follows; a request already sent may still have been applied.
 */
export interface CallOptions {
  signal?: AbortSignal;
}

/**
 * A typed client of the audit server for agent runtimes (the lifecycle calls, as a `worker`)
 * and for their owners (threads, runs, audits). Lifecycle calls, claims and creations (with their
 * claimId or createId) and reads are retried with the identical request after transport failures;
 * GraphQL errors are thrown as final `AuditApiError`s.
 */
export class AuditClient {
  readonly clockId: string;
  private readonly transport: GraphQLHttpTransport;
  private readonly writer: EventWriter | undefined;
  private readonly maxJsonBytes: number;

  constructor(options: AuditClientOptions) {
    this.clockId = options.clockId ?? PROCESS_CLOCK_ID;
    this.maxJsonBytes = options.maxJsonBytes ?? DEFAULT_MAX_JSON_BYTES;
    const post = options.fetch ? fetchPost(options.url, options.fetch) : nodeHttpPost(options.url);
    this.transport = new GraphQLHttpTransport(post, options.token, {
      ...DEFAULT_RETRY_POLICY,
      ...options.retry,
    });
    if (options.batching !== false) this.writer = new EventWriter(this.transport, options.batching === true ? {} : options.batching);
  }

  /** Resolves once every lifecycle event written so far has been answered; `signal` stops waiting (the events go on). */
  flush(options: CallOptions = {}): Promise<void> {
    return this.writer?.flush(options.signal) ?? Promise.resolve();
  }

  /**
   * Flushes the lifecycle events still queued; the client stays usable. When `signal` aborts first
   * (a shutdown's grace period running out), every event not yet answered is given up: those
   * queued are never sent, the request in flight is cut, and each call rejects with the signal's
   * reason, so that nothing keeps the process alive.
   */
  async close(options: CallOptions = {}): Promise<void> {
    const { signal } = options;
    try {
      await this.flush(options);
    } catch (error) {
      if (signal?.aborted) this.writer?.abandon(signal.reason);
      throw error;
    }
  }

  /**
   * A lifecycle event through the batching writer, or as its own mutation when batching is off.
   * `build` makes its input; a value it cannot convert (a sequence of 1.5, an invalid Date) is
   * refused as BAD_USER_INPUT, as the server refuses a sequence of "1.5".
   */
  private event<K extends LifecycleEventKind>(kind: K, build: () => Record<string, unknown>, { signal }: CallOptions = {}): Promise<LifecycleEventValue<K>> {
    let input: Record<string, unknown>;
    try {
      input = build();
    } catch (error) {
      if (!(error instanceof RangeError || error instanceof SyntaxError)) throw error;
      const operationName = EventWriter.operationOf(kind).name;
      throw new AuditApiError(`${operationName}: ${error.message}`, { code: 'BAD_USER_INPUT', operationName, retryable: false, cause: error });
    }
    if (this.writer) return this.writer.write(kind, input, signal);
    return this.transport.execute(EventWriter.operationOf(kind), { input }, undefined, signal) as Promise<LifecycleEventValue<K>>;
  }

  // ---- Worker: the run lifecycle ----

  /**
   * QUEUED -> RUNNING with this worker as owner. The claim carries a `claimId` (a fresh UUID
   * unless given) and is retried with it after transport failures: a retry of a claim that won
   * unseen gets the same lease back, so a lost answer never costs the run. It goes through the
   * batching writer like every lifecycle event.
   *
   * `signal` stops waiting: an aborted claim rejects with the signal's reason at once (it is not
   * sent when the signal was aborted before; CallOptions). A claim already sent may still win on the server:
   * when it answers, the run is handed back at once, ended INTERRUPTED (resumable), so that no
   * run stays RUNNING with nobody working on it.
   */
  async claimRun(runId: string, leaseSeconds?: number, claimId: string = globalThis.crypto.randomUUID(), options: CallOptions = {}): Promise<RunLease> {
    const { signal } = options;
    signal?.throwIfAborted();
    const claim = this.event('claimRun', () => ({ runId, leaseSeconds, claimId }));
    if (!signal) return claim;
    return new Promise<RunLease>((resolve, reject) => {
      const abandon = () => {
        reject(signal.reason);
        claim.then((lease) => this.finishRun({ lease, status: 'INTERRUPTED' })).catch(() => {});
      };
      const detach = onAbort(signal, abandon);
      void claim.then(resolve, reject).finally(detach);
    });
  }

  /**
   * Extends an unexpired lease; returns it with its new expiry. Sent at once as its own request,
   * never queued behind the batching writer's request in flight: another run's slow request must
   * not let this lease expire. A renewal replays harmlessly and its order against the run's
   * events does not matter. `retry` replaces parts of the client's policy for this renewal
   * (LeaseKeeper sends one attempt of at most a third of the lease).
   */
  async renewLease(lease: LeaseInput, leaseSeconds?: number, retry?: Partial<RetryPolicy>, options: CallOptions = {}): Promise<RunLease> {
    return this.transport.execute(OPERATIONS.renewLease, { lease: leaseRef(lease), leaseSeconds }, retry, options.signal);
  }

  /** How this client's requests are retried. */
  get retry(): RetryPolicy {
    return this.transport.policyOf();
  }

  async recordModelStarted(input: ModelStartedInput, options?: CallOptions): Promise<ModelAudit> {
    return this.event('modelStarted', () => ({
      lease: leaseRef(input.lease),
      operationId: input.operationId,
      sequence: toBigIntString(input.sequence, 'sequence'),
      model: input.model,
      input: this.payload(input.input),
      ...this.observe(input),
    }), options);
  }

  /** Closes the model call; each declared tool call becomes a PENDING ToolCall. */
  async recordModelFinished(input: ModelFinishedInput, options?: CallOptions): Promise<ModelAudit> {
    return this.event('modelFinished', () => ({
      lease: leaseRef(input.lease),
      operationId: input.operationId,
      status: input.status,
      output: this.payload(input.output),
      error: this.payload(input.error),
      usage: this.payload(input.usage),
      toolCalls: input.toolCalls?.map(({ id, name, args }) => ({ id, name, args: this.payload(args) })),
      sequence: optionalBigInt(input.sequence),
      ...this.observe(input),
    }), options);
  }

  async recordToolStarted(input: ToolStartedInput, options?: CallOptions): Promise<ToolAudit> {
    return this.event('toolStarted', () => ({
      lease: leaseRef(input.lease),
      toolCallId: input.toolCallId,
      name: input.name,
      effectiveInput: this.payload(input.effectiveInput),
      sequence: toBigIntString(input.sequence, 'sequence'),
      namespace: input.namespace,
      ...this.observe(input),
    }), options);
  }

  /** An `output.status` of "error" records a controlled failure (FAILED), anything else COMPLETED. */
  async recordToolFinished(input: ToolFinishedInput, options?: CallOptions): Promise<ToolAudit> {
    return this.event('toolFinished', () => ({
      lease: leaseRef(input.lease),
      toolCallId: input.toolCallId,
      output: this.payload(input.output),
      sequence: optionalBigInt(input.sequence),
      namespace: input.namespace,
      ...this.observe(input),
    }), options);
  }

  /** A bare error (perhaps an interrupt): the audit stays RUNNING until the run's verdict. */
  async recordToolError(input: ToolErrorInput, options?: CallOptions): Promise<ToolAudit> {
    return this.event('toolError', () => ({
      lease: leaseRef(input.lease),
      toolCallId: input.toolCallId,
      error: this.payload(input.error),
      sequence: optionalBigInt(input.sequence),
      namespace: input.namespace,
      ...this.observe(input),
    }), options);
  }

  /**
   * Ends the run and closes what is still open in it. After a transport failure it is retried,
   * but an ended run answers every lifecycle write with LEASE_LOST: a LEASE_LOST with
   * `attempts > 1` may mean the first attempt committed.
   */
  async finishRun(input: FinishRunInput, options?: CallOptions): Promise<Run> {
    return this.event('finishRun', () => ({
      lease: leaseRef(input.lease),
      status: input.status,
      error: this.payload(input.error),
      stateMessages: input.stateMessages && settlingMessages(input.stateMessages.map(toJson)).map((message) => this.payload(message)),
    }), options);
  }

  // ---- Owner side (creations carry a createId and are retried with it, as reads are; messages and cancels are not retried) ----

  /**
   * The caller becomes the thread's owner. The creation carries a `createId` (a fresh UUID unless
   * given) and is retried with it after transport failures: a retry of a creation that committed
   * unseen gets that thread, never a second one.
   */
  async createThread(input: CreateThreadInput = {}, options: CallOptions = {}): Promise<Thread> {
    const { title, createId = globalThis.crypto.randomUUID() } = input;
    return this.transport.execute(OPERATIONS.createThread, { input: { title, createId } }, undefined, options.signal);
  }

  async appendMessage(input: AppendMessageInput, options: CallOptions = {}): Promise<Message> {
    const { threadId, role, content } = input;
    return this.transport.execute(OPERATIONS.appendMessage, { input: { threadId, role, content } }, undefined, options.signal);
  }

  /**
   * A QUEUED run; `resumeFromRunId` names an ended run of the same thread. Like `createThread`, it
   * carries a `createId` (a fresh UUID unless given) and is retried with it: a lost answer never
   * leaves a second run that no one claims.
   */
  async createRun(input: CreateRunInput, options: CallOptions = {}): Promise<Run> {
    const { threadId, resumeFromRunId, createId = globalThis.crypto.randomUUID() } = input;
    return this.transport.execute(OPERATIONS.createRun, { input: { threadId, resumeFromRunId, createId } }, undefined, options.signal);
  }

  /** Ends a QUEUED or RUNNING run as CANCELLED and revokes its lease. */
  async cancelRun(runId: string, options: CallOptions = {}): Promise<Run> {
    return this.transport.execute(OPERATIONS.cancelRun, { runId }, undefined, options.signal);
  }

  /**
   * Deletes the thread and everything under it (its owner, an admin or a superadmin), answering
   * once it is gone with the receipt. Not retried: a deletion whose answer was lost is
   * `NOT_FOUND` when sent again, and its receipt is in the server's log (docs/deletion.md).
   */
  async deleteThread(id: string, options: CallOptions = {}): Promise<DeletionReceipt> {
    return this.transport.execute(OPERATIONS.deleteThread, { id }, undefined, options.signal);
  }

  /** The newest `limit` (1 to 500, server default 500) audits of a thread, oldest first. Superadmin owners only. */
  async threadAudits(threadId: string, limit?: number, options: CallOptions = {}): Promise<ThreadAudits> {
    return this.transport.execute(OPERATIONS.threadAudits, { threadId, limit }, undefined, options.signal);
  }

  /** The run with its ToolCall projection; one that does not exist (or whose thread was deleted) is an `AuditApiError` `NOT_FOUND`. */
  async run(id: string, options: CallOptions = {}): Promise<RunDetails | null> {
    return this.transport.execute(OPERATIONS.run, { id }, undefined, options.signal);
  }

  /** A payload as the server stores it: JSON (toJson), at most maxJsonBytes (capJson); undefined is left out. */
  private payload(value: unknown): JsonValue | undefined {
    return value === undefined ? undefined : capJson(toJson(value), this.maxJsonBytes);
  }

  // Read once per call, before the first attempt, so retries replay the same observation.
  private observe(input: Observation): { observedAt: string; clock: { clockId: string; nanos: string } | null } {
    const clock = input.clock === undefined ? readClock(this.clockId) : input.clock && toClockInput(input.clock);
    const observedAt = input.observedAt === undefined ? new Date() : input.observedAt;
    if (typeof observedAt !== 'string' && Number.isNaN(observedAt.getTime())) throw new RangeError('observedAt must be a valid Date, not an Invalid Date');
    return { observedAt: typeof observedAt === 'string' ? observedAt : observedAt.toISOString(), clock };
  }
}

function leaseRef(lease: LeaseInput): LeaseInput {
  return { runId: lease.runId, epoch: lease.epoch };
}

function optionalBigInt(value: BigIntLike | null | undefined): string | null | undefined {
  return value === undefined || value === null ? value : toBigIntString(value, 'sequence');
}
