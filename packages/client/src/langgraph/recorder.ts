import { isBaseMessage } from '@langchain/core/messages';
import type { RunnableConfig } from '@langchain/core/runnables';
import { onAbort } from '../abort.js';
import type { AuditClient, CallOptions } from '../audit-client.js';
import { errorJson } from '../json.js';
import { abortedStatus, RunRecording, type FinishedRun, type RecordingOptions } from '../run-recording.js';
import { settlingMessages } from '../state-messages.js';
import type { JsonObject, JsonValue, RunTerminalStatus } from '../types.js';
import { AuditCallbackHandler, type ToolRerun } from './handler.js';
import { messageJson } from './messages.js';

export interface LangGraphAuditOptions extends RecordingOptions {
  /** The state key holding the graph's messages. Default "messages". */
  messagesKey?: string;
  /**
   * Called when the graph runs a tool again for a tool call that had already ended (a resume
   * re-runs the paused step's completed tools): the server keeps the first execution, so this
   * is the only sign of the second one. Not a write error.
   */
  onToolRerun?: (rerun: ToolRerun) => void;
}

/** How an invocation ended, as handed to `AuditedRun.finish`. */
export type InvocationOutcome = { state: unknown } | { error: unknown };

/** A graph that can be invoked, as LangGraph's compiled graphs are. */
export interface InvokableGraph<Input, State> {
  invoke(input: Input, config?: RunnableConfig): Promise<State>;
}

/**
 * Records LangGraph.js invocations as audit runs, through a worker's AuditClient.
 *
 *   const audit = new LangGraphAudit(worker);
 *   const { state, status } = await audit.invoke(runId, graph, input, { configurable: { thread_id } });
 */
export class LangGraphAudit {
  constructor(
    private readonly client: AuditClient,
    private readonly options: LangGraphAuditOptions = {},
  ) {}

  /**
   * Claims the QUEUED run and keeps its lease; invoke the graph with `run.record(config)` (or pass
   * `run.handler` in its callbacks yourself). Aborting `signal` while the claim is in flight
   * rejects with its reason; the run, if the claim won, is ended INTERRUPTED.
   */
  async start(runId: string, { signal }: { signal?: AbortSignal } = {}): Promise<AuditedRun> {
    return new AuditedRun(await RunRecording.claim(this.client, runId, this.options, signal), this.options);
  }

  /**
   * Claims the run, invokes the graph with the recording handler, and ends the run: INTERRUPTED
   * when the graph paused on interrupt(), CANCELLED when `config.signal` aborted it, FAILED when
   * it threw (the error is rethrown in both cases), COMPLETED otherwise. A lost lease aborts the invocation with AuditLeaseLostError. Once the
   * graph has returned, its state is returned even when the run could not be ended (see
   * `tryFinish`: `recordingError`). `options.signal` bounds the run's end (`finish`): a shutdown's
   * grace period, where `config.signal` is the shutdown itself.
   */
  async invoke<Input, State>(
    runId: string,
    graph: InvokableGraph<Input, State>,
    input: Input,
    config: RunnableConfig = {},
    options: CallOptions = {},
  ): Promise<FinishedRun & { state: State }> {
    callbackList(config.callbacks); // refused before the run is claimed
    const run = await this.start(runId, { signal: config.signal });
    let state: State;
    try {
      state = await graph.invoke(input, run.record(config));
    } catch (error) {
      run.stopIfLeaseLost();
      await run.finish({ error }, options);
      throw error;
    }
    return { ...(await run.tryFinish({ state }, options)), state };
  }
}

/** One claimed run being recorded: the handler to pass to the graph, and `finish` to end the run. */
export class AuditedRun {
  readonly handler: AuditCallbackHandler;
  private readonly messagesKey: string;
  private callerSignal: AbortSignal | undefined;
  /** Takes record()'s listener off the caller's signal, which may outlive the run (a worker pool's shutdown signal). */
  private detach = () => {};

  constructor(
    private readonly recording: RunRecording,
    options: LangGraphAuditOptions = {},
  ) {
    this.handler = new AuditCallbackHandler({
      client: recording.client,
      lease: () => recording.lease,
      writer: recording.writer,
      onToolRerun: options.onToolRerun,
      toolCallIds: recording.toolCallIds,
    });
    this.messagesKey = options.messagesKey ?? 'messages';
  }

  get runId(): string {
    return this.recording.runId;
  }

  /** Aborted when the lease is lost; pass it as the invocation's `signal` to stop the agent at once. */
  get signal(): AbortSignal {
    return this.recording.signal;
  }

  /** Throws AuditLeaseLostError once the lease is lost. */
  stopIfLeaseLost(): void {
    if (this.recording.writer.leaseLost) this.detach();
    this.recording.stopIfLeaseLost();
  }

  /**
   * The invocation's config with the handler added to its callbacks (an array) and the lease's
   * signal joined to its signal; an abort by that signal of yours ends the run CANCELLED.
   */
  record<Config extends RunnableConfig>(config: Config = {} as Config): Config {
    const signal = (this.callerSignal = config.signal);
    this.detach();
    if (signal) {
      // A streamed answer the user stops is recorded with its text now, before the graph rejects.
      this.detach = onAbort(signal, () => this.handler.stopModelCalls(signal.reason));
    }
    return {
      ...config,
      callbacks: [...callbackList(config.callbacks), this.handler],
      signal: config.signal ? AbortSignal.any([config.signal, this.signal]) : this.signal,
    };
  }

  /**
   * Waits for every queued write, then ends the run: CANCELLED when the signal given to `record`
   * aborted, FAILED for an error, INTERRUPTED when the
   * graph paused on interrupt(), else COMPLETED. The final state's ToolMessages of tools that
   * ended in a bare error go along as `stateMessages`, so the server settles them; at a pause
   * on interrupt() they are sent as those tools' finishes first (the server settles from the
   * state only at a COMPLETED or FAILED end). `signal` bounds it (a shutdown's grace period),
   * as RunRecording.finish says.
   */
  async finish(outcome: InvocationOutcome, options: CallOptions = {}): Promise<FinishedRun> {
    this.detach();
    const status = this.endingOf(outcome);
    if (status === 'INTERRUPTED' && 'state' in outcome) {
      // The server reconciles bare errors from the state only for COMPLETED and FAILED runs; at a
      // pause it would close them INTERRUPTED and their ToolCalls back to PENDING, and the resume
      // never runs those tools again: settle each from its last error ToolMessage now.
      for (const message of settlingMessages(this.bareErrorToolMessages(outcome.state))) await this.handler.settleBareError(message);
    }
    return this.recording.finish(
      status,
      {
        error: 'error' in outcome ? errorJson(outcome.error) : undefined,
        stateMessages: 'state' in outcome && status !== 'INTERRUPTED' ? this.bareErrorToolMessages(outcome.state) : undefined,
      },
      options,
    );
  }

  /**
   * `finish`, for when the graph's state must reach the caller whatever happens to the
   * recording: a run that could not be ended (a lost lease, a refused token, the server out of
   * reach, `signal` aborted first) comes back with `run: null` and the error as `recordingError`,
   * instead of thrown.
   */
  tryFinish(outcome: InvocationOutcome, options: CallOptions = {}): Promise<FinishedRun> {
    return this.recording.tryFinish(this.endingOf(outcome), () => this.finish(outcome, options));
  }

  private endingOf(outcome: InvocationOutcome): RunTerminalStatus {
    if (this.callerSignal?.aborted) return abortedStatus(this.callerSignal);
    if ('error' in outcome) return 'FAILED';
    const pending = (outcome.state as { __interrupt__?: unknown[] } | null)?.__interrupt__;
    return this.handler.interrupt || (Array.isArray(pending) && pending.length > 0) ? 'INTERRUPTED' : 'COMPLETED';
  }

  /** Only the messages that can settle something: the ToolMessages of this run's bare errors. */
  private bareErrorToolMessages(state: unknown): JsonValue[] {
    const messages = (state as Record<string, unknown> | null)?.[this.messagesKey];
    if (!Array.isArray(messages)) return [];
    const json = messages.filter(isBaseMessage).map(messageJson);
    const toolMessages = json.filter((message): message is JsonObject & { tool_call_id: string } => typeof message.tool_call_id === 'string');
    // A reused tool call id (see ToolCallIds): a ToolMessage answers the latest AI message before it
    // that declared its id; the last AI messages declaring an id are this run's declarations of it.
    const declaredIds = (message: JsonObject) => ((message.tool_calls as { id?: string }[] | undefined) ?? []).flatMap(({ id }) => (id ? [id] : []));
    const declarations = json.flatMap(declaredIds);
    const seen = new Map<string, number>();
    for (const message of json) {
      for (const id of declaredIds(message)) seen.set(id, (seen.get(id) ?? 0) + 1);
      if (typeof message.tool_call_id !== 'string') continue;
      const recorded = this.handler.toolCallIds.all(message.tool_call_id);
      const beforeThisRun = declarations.filter((id) => id === message.tool_call_id).length - recorded.length;
      const recordedId = recorded[(seen.get(message.tool_call_id) ?? 0) - 1 - beforeThisRun];
      if (recordedId) message.tool_call_id = recordedId;
    }
    return toolMessages.filter((message) => this.handler.bareErrors.has(message.tool_call_id));
  }
}

function callbackList(callbacks: RunnableConfig['callbacks']): NonNullable<Extract<RunnableConfig['callbacks'], unknown[]>> {
  if (callbacks === undefined) return [];
  if (Array.isArray(callbacks)) return callbacks;
  throw new TypeError('LangGraphAudit.invoke takes callbacks as an array of handlers; add run.handler yourself with start()');
}
