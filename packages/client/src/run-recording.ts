import type { AuditClient, CallOptions } from './audit-client.js';
import { SequenceCounter, readClock } from './clock.js';
import { isAuditApiError } from './errors.js';
import { LeaseKeeper } from './lease-keeper.js';
import { RUN_GONE_CODES, RunWriter } from './run-writer.js';
import type { JsonValue, LeaseInput, Run, RunLease, RunTerminalStatus } from './types.js';

/** What every framework adapter lets its user tune. */
export interface RecordingOptions {
  /** Requested lease length, renewed in the background at about a third of it. Default 60. */
  leaseSeconds?: number;
  /** The longest the agent waits for one audit write before going on without it. Default 2000 ms. */
  budgetMs?: number;
  /** Called for each write the server refused for a reason other than a lost lease (the run goes on). */
  onWriteError?: (error: unknown) => void;
}

/**
 * An abort reason that hands the run over instead of cancelling it: a worker shutting down
 * (SIGTERM) aborts its runs with `controller.abort(new RunInterruption())`, and each run the
 * adapters record ends INTERRUPTED (its running tools INTERRUPTED, their calls PENDING again, for a
 * run that resumes it) where any other abort ends it CANCELLED.
 */
export class RunInterruption extends Error {
  constructor(message = 'the worker stopped the run to hand it over') {
    super(message);
    this.name = 'RunInterruption';
  }
}

/** How a run whose caller's signal aborted ends: INTERRUPTED for a RunInterruption, else CANCELLED. */
export function abortedStatus(signal: AbortSignal): 'INTERRUPTED' | 'CANCELLED' {
  return signal.reason instanceof RunInterruption ? 'INTERRUPTED' : 'CANCELLED';
}

export interface FinishedRun {
  status: RunTerminalStatus;
  /**
   * The ended run, as finishRun answered it; null when that answer was lost and the resend was
   * refused because this very finish had already ended the run (`status` is then what it ended as).
   */
  run: Run | null;
  /** Writes the server refused (other than for a lost lease); their events are missing from the timeline. */
  writeErrors: unknown[];
  /**
   * Why the run could not be ended, when it could not (`run` is then null and the run was not
   * ended as `status` says). Only `tryFinish` and the one-call methods return it, once the agent is
   * done, so that its result still reaches you; `finish` throws it.
   */
  recordingError?: unknown;
}

/**
 * The ids a run's tool calls are recorded under. The server keys a run's tool executions by
 * tool call id, but some models number their calls afresh in every response (`call_0` at each
 * step), or give two calls of one response the same id: an id the model declares again in the
 * same run is recorded as `<id>#<n>` (its n-th declaration), and the executions that follow take
 * the ids of the newest response's declarations of it, one each, in order.
 */
export class ToolCallIds {
  private readonly declared = new Map<string, string[]>();
  /** The newest declaring response's recorded ids of each model id that no execution took yet. */
  private readonly unexecuted = new Map<string, string[]>();

  /** A model response declared `ids`: the ids they are recorded under, in the same order. */
  declare(ids: readonly string[]): string[] {
    for (const id of new Set(ids)) this.unexecuted.set(id, []);
    return ids.map((id) => {
      const recorded = this.declared.get(id) ?? [];
      recorded.push(recorded.length === 0 ? id : `${id}#${recorded.length + 1}`);
      this.declared.set(id, recorded);
      this.unexecuted.get(id)!.push(recorded.at(-1)!);
      return recorded.at(-1)!;
    });
  }

  /**
   * The id an execution of the model's `id` is recorded under: the next of the newest response's
   * declarations of it; once each has run, the newest (a tool run again).
   */
  current(id: string): string {
    return this.unexecuted.get(id)?.shift() ?? this.declared.get(id)?.at(-1) ?? id;
  }

  /** The ids the declarations of the model's `id` were recorded under, in order. */
  all(id: string): readonly string[] {
    return this.declared.get(id) ?? [];
  }
}

/**
 * One claimed run that a framework adapter records: its lease kept alive, its writes sent in
 * the order the events happened and waited for at most the budget, one sequence counter, and
 * its end. When the lease is lost, `signal` aborts (stop the agent with it) and every later
 * write throws AuditLeaseLostError.
 */
export class RunRecording {
  readonly writer: RunWriter;
  readonly toolCallIds = new ToolCallIds();
  private readonly keeper: LeaseKeeper;
  private readonly lostController = new AbortController();
  private readonly sequence = new SequenceCounter(1);

  /**
   * Claims the QUEUED run `runId` and starts keeping its lease. Aborting `signal` while the claim
   * is in flight rejects with its reason, and a claim that wins after it is ended INTERRUPTED
   * (AuditClient.claimRun), never kept.
   */
  static async claim(client: AuditClient, runId: string, options: RecordingOptions = {}, signal?: AbortSignal): Promise<RunRecording> {
    const leaseSeconds = options.leaseSeconds ?? 60;
    return new RunRecording(client, await client.claimRun(runId, leaseSeconds, undefined, { signal }), { ...options, leaseSeconds });
  }

  constructor(
    readonly client: AuditClient,
    lease: RunLease,
    options: RecordingOptions & { leaseSeconds: number },
  ) {
    this.writer = new RunWriter(lease.runId, options.budgetMs ?? 2_000, (lost) => this.lostController.abort(lost), options.onWriteError);
    this.keeper = new LeaseKeeper(client, lease, {
      leaseSeconds: options.leaseSeconds,
      onLost: (error) => this.writer.markLost(error),
      // An expired or refused worker token is no lost lease: said once, where write errors go; the
      // writes that follow fail alike until the lease expires.
      onTokenRejected: (error) => this.writer.reportFailure(error),
    });
  }

  get runId(): string {
    return this.keeper.lease.runId;
  }

  /** The newest lease. */
  get lease(): RunLease {
    return this.keeper.lease;
  }

  /** Aborted, with the AuditLeaseLostError as reason, when the lease is lost. */
  get signal(): AbortSignal {
    return this.lostController.signal;
  }

  /** The sequence number and clock readings of an event: take them when it happens, not when it is sent. */
  observe() {
    return { sequence: this.sequence.next(), observedAt: new Date(), clock: readClock(this.client.clockId) };
  }

  /** Queues a write (given the current lease) after every earlier one; waits for it at most the budget. */
  write(send: (lease: LeaseInput) => Promise<unknown>): Promise<void> {
    return this.writer.submit(() => send(this.keeper.lease));
  }

  /** Throws AuditLeaseLostError once the lease is lost (and stops renewing). */
  stopIfLeaseLost(): void {
    if (this.writer.leaseLost) {
      this.keeper.stop();
      this.writer.throwIfLost();
    }
  }

  /**
   * `finish` (the adapter's own, which ends the run as `status`), for when the agent's result must
   * reach the caller whatever happens to the recording: a run that could not be ended (a lost
   * lease, a refused token, the server out of reach, `finish`'s signal aborted) comes back with
   * `run: null` and the error as `recordingError`, instead of thrown.
   */
  async tryFinish(status: RunTerminalStatus, finish: () => Promise<FinishedRun>): Promise<FinishedRun> {
    try {
      return await finish();
    } catch (recordingError) {
      this.keeper.stop();
      return { status, run: null, writeErrors: [...this.writer.failures], recordingError };
    }
  }

  /**
   * Waits for every queued write, then ends the run. `signal` bounds both (a shutdown's grace
   * period, CallOptions): once it aborts, `finish` rejects with its reason, the writes still queued
   * are never sent and the lease is no longer renewed, so its expiry ends the run.
   */
  async finish(status: RunTerminalStatus, details: { error?: JsonValue; stateMessages?: JsonValue[] } = {}, { signal }: CallOptions = {}): Promise<FinishedRun> {
    try {
      return await this.end(status, details, signal);
    } catch (error) {
      if (signal?.aborted) {
        this.keeper.stop();
        this.writer.giveUp();
      }
      throw error;
    }
  }

  private async end(status: RunTerminalStatus, details: { error?: JsonValue; stateMessages?: JsonValue[] }, signal: AbortSignal | undefined): Promise<FinishedRun> {
    await this.writer.drain(signal);
    this.keeper.stop();
    this.stopIfLeaseLost();
    try {
      const run = await this.client.finishRun({ lease: this.keeper.lease, status, ...details }, { signal });
      return { status, run, writeErrors: [...this.writer.failures] };
    } catch (error) {
      // finishRun is not replayable: when the answer to an attempt that committed is lost, the
      // client's resend answers LEASE_LOST. A refusal naming the status asked for means the run
      // ended as asked: only a worker's finish ends a run COMPLETED or INTERRUPTED, and a cancel
      // (CANCELLED) or the sweeper (FAILED) meanwhile would have ended it so anyway.
      if (isAuditApiError(error, 'LEASE_LOST') && error.runStatus === status) {
        return { status, run: null, writeErrors: [...this.writer.failures] };
      }
      if (isAuditApiError(error, ...RUN_GONE_CODES)) this.writer.markLost(error);
      this.writer.throwIfLost();
      throw error;
    }
  }
}

