import { generateText, streamText, wrapLanguageModel, type LanguageModelMiddleware, type StepResult, type ToolSet } from 'ai';
import type { AuditClient, CallOptions } from '../audit-client.js';
import { errorJson } from '../json.js';
import { abortedStatus, RunRecording, type FinishedRun, type RecordingOptions } from '../run-recording.js';
import type { JsonObject, RunTerminalStatus } from '../types.js';
import { modelCallRecorder } from './model-calls.js';
import { errorText, recordCallsNeverRun, recordedTools } from './tool-calls.js';

/** A model the AI SDK's middleware can wrap (a provider's model object, not a gateway id string). */
export type WrappableModel = Parameters<typeof wrapLanguageModel>[0]['model'];

/** The options of generateText, streamText or a ToolLoopAgent that the recording touches. */
export interface RecordableOptions {
  model: WrappableModel;
  tools?: ToolSet;
  abortSignal?: AbortSignal;
  onStepFinish?: (step: StepResult<any>) => unknown;
}

/**
 * How the SDK call ended: its steps (generateText's or streamText's `steps`), with the error
 * of a stream that failed after them (an error part), or what it threw.
 */
export type AiSdkOutcome = { steps: ReadonlyArray<StepResult<any>>; error?: unknown } | { error: unknown };

/**
 * Records Vercel AI SDK calls as audit runs, through a worker's AuditClient.
 *
 *   const audit = new AiSdkAudit(worker);
 *   const { result, status } = await audit.generateText(runId, { model, tools, prompt, stopWhen });
 */
export class AiSdkAudit {
  constructor(
    private readonly client: AuditClient,
    private readonly options: RecordingOptions = {},
  ) {}

  /**
   * Claims the QUEUED run and keeps its lease; pass `run.record(options)` to the SDK, then
   * `run.finish(...)`. Aborting `signal` while the claim is in flight rejects with its reason;
   * the run, if the claim won, is ended INTERRUPTED.
   */
  async start(runId: string, { signal }: { signal?: AbortSignal } = {}): Promise<AuditedAiRun> {
    return new AuditedAiRun(await RunRecording.claim(this.client, runId, this.options, signal));
  }

  /**
   * Claims the run, calls generateText recorded, and ends the run: COMPLETED, CANCELLED when
   * the caller's abortSignal aborted it, FAILED when it threw (the error is rethrown). A lost
   * lease aborts the call and throws AuditLeaseLostError. Once the call has returned, its result
   * is returned even when the run could not be ended (see `tryFinish`: `recordingError`).
   * `callOptions.signal` bounds the run's end (`finish`): a shutdown's grace period, where `abortSignal`
   * is the shutdown itself.
   */
  async generateText<TOOLS extends ToolSet>(
    runId: string,
    options: Parameters<typeof generateText<TOOLS>>[0] & RecordableOptions,
    callOptions: CallOptions = {},
  ): Promise<FinishedRun & { result: Awaited<ReturnType<typeof generateText<TOOLS>>> }> {
    const run = await this.start(runId, { signal: options.abortSignal });
    let result: Awaited<ReturnType<typeof generateText<TOOLS>>>;
    try {
      result = await generateText(run.record(options));
    } catch (error) {
      run.stopIfLeaseLost();
      await run.finish({ error }, callOptions);
      throw error;
    }
    return { ...(await run.tryFinish({ steps: result.steps }, callOptions)), result };
  }

  /**
   * Claims the run and starts streamText recorded. Consume `result` as usual (the stream's
   * errors reach you there, and through your `onError`); `finished` resolves once the stream has
   * ended and the run with it, with the status recorded: COMPLETED, FAILED when the stream failed
   * (an error part included; `error` is that error), CANCELLED when your abortSignal stopped it.
   * It rejects only when the recording itself failed: AuditLeaseLostError when the lease was
   * lost, the error of the finishRun call, or the reason of `callOptions.signal`, which bounds the run's
   * end as `finish`'s does.
   */
  async streamText<TOOLS extends ToolSet>(
    runId: string,
    options: Parameters<typeof streamText<TOOLS>>[0] & RecordableOptions,
    callOptions: CallOptions = {},
  ): Promise<{ result: ReturnType<typeof streamText<TOOLS>>; finished: Promise<FinishedStream> }> {
    const run = await this.start(runId, { signal: options.abortSignal });
    let streamError: { error: unknown } | undefined;
    const callerOnError = options.onError;
    const result = streamText({
      ...run.record(options),
      // An error part does not fail `steps`: heard here, it makes the run FAILED.
      onError: async (event: { error: unknown }) => {
        streamError ??= { error: event.error };
        if (callerOnError) await callerOnError(event);
        else console.error(event.error); // the SDK's default onError
      },
    });
    const finished = Promise.resolve(result.steps).then(
      async (steps): Promise<FinishedStream> => ({ ...(await run.finish({ steps, ...streamError }, callOptions)), ...streamError }),
      async (error: unknown): Promise<FinishedStream> => {
        run.stopIfLeaseLost();
        return { ...(await run.finish({ error }, callOptions)), error };
      },
    );
    // Handled here too: a worker whose own code threw before `await finished` must not crash on an
    // unhandled rejection (a lost lease), which would end every run of its process; awaited, it rejects as before.
    finished.catch(() => {});
    return { result, finished };
  }
}

/** How a recorded stream ended: the run as recorded and, when the stream failed or was aborted, its error. */
export type FinishedStream = FinishedRun & { error?: unknown };

/** One claimed run being recorded: `record` the SDK call's options, then `finish` the run. */
export class AuditedAiRun {
  readonly middleware: LanguageModelMiddleware;
  /** Tool calls of this run whose execute threw (bare errors): the final steps settle them. */
  private readonly bareErrors = new Map<string, string>();
  private callerSignal: AbortSignal | undefined;

  constructor(private readonly recording: RunRecording) {
    this.middleware = modelCallRecorder(recording);
  }

  get runId(): string {
    return this.recording.runId;
  }

  /** Aborted when the lease is lost. `record` already passes it to the SDK call. */
  get signal(): AbortSignal {
    return this.recording.signal;
  }

  /** The model with every call recorded (the SDK's wrapLanguageModel with this run's middleware). */
  model(model: WrappableModel): WrappableModel {
    return wrapLanguageModel({ model, middleware: this.middleware });
  }

  /** The tools with each execute recorded. */
  tools<TOOLS extends ToolSet>(tools: TOOLS): TOOLS {
    return recordedTools(this.recording, tools, this.bareErrors);
  }

  /**
   * The call's options with the model and tools recorded, the lease's signal joined to its
   * abortSignal, and each step's calls the SDK never ran recorded as it finishes.
   */
  record<O extends RecordableOptions>(options: O): O {
    this.callerSignal = options.abortSignal;
    const callerOnStepFinish = options.onStepFinish;
    return {
      ...options,
      onStepFinish: async (step: StepResult<any>) => {
        await recordCallsNeverRun(this.recording, step);
        await callerOnStepFinish?.(step);
      },
      model: this.model(options.model),
      ...(options.tools ? { tools: this.tools(options.tools) } : {}),
      abortSignal: options.abortSignal ? AbortSignal.any([options.abortSignal, this.signal]) : this.signal,
    };
  }

  /** Throws AuditLeaseLostError once the lease is lost. */
  stopIfLeaseLost(): void {
    this.recording.stopIfLeaseLost();
  }

  /**
   * Waits for every queued write, then ends the run: CANCELLED when the caller's abortSignal
   * fired, FAILED for an error (with or without steps), INTERRUPTED when the last step stopped
   * for a tool approval (`needsApproval`: the approved call runs in the run that resumes this
   * one), else COMPLETED. The tool errors the SDK handed back to the model for this run's bare
   * errors settle them as FAILED: as `stateMessages`, or at a pause (where the server does not
   * settle from the state) as those tools' finishes first. `signal` bounds it (a shutdown's grace
   * period), as RunRecording.finish says.
   */
  async finish(outcome: AiSdkOutcome, options: CallOptions = {}): Promise<FinishedRun> {
    this.stopIfLeaseLost();
    const failed = 'error' in outcome && outcome.error !== undefined;
    const status = this.statusOf(outcome);
    const settling = 'steps' in outcome ? this.settlingMessages(outcome.steps) : undefined;
    if (status === 'INTERRUPTED') {
      for (const output of settling ?? []) {
        const toolCallId = String(output.tool_call_id);
        const event = this.recording.observe();
        await this.recording.write((lease) => this.recording.client.recordToolFinished({ lease, toolCallId, output, ...event }));
      }
    }
    return this.recording.finish(
      status,
      {
        error: failed ? errorJson(outcome.error) : undefined,
        stateMessages: status === 'INTERRUPTED' ? undefined : settling,
      },
      options,
    );
  }

  /**
   * `finish`, for when the agent's result must reach the caller whatever happens to the
   * recording: a run that could not be ended (a lost lease, a refused token, the server out of
   * reach, `signal` aborted first) comes back with `run: null` and the error as `recordingError`,
   * instead of thrown.
   */
  tryFinish(outcome: AiSdkOutcome, options: CallOptions = {}): Promise<FinishedRun> {
    return this.recording.tryFinish(this.statusOf(outcome), () => this.finish(outcome, options));
  }

  private statusOf(outcome: AiSdkOutcome): RunTerminalStatus {
    const failed = 'error' in outcome && outcome.error !== undefined;
    if (this.callerSignal?.aborted) return abortedStatus(this.callerSignal);
    if (failed) return 'FAILED';
    const last = 'steps' in outcome ? outcome.steps.at(-1) : undefined;
    return last?.content.some((part) => part.type === 'tool-approval-request') ? 'INTERRUPTED' : 'COMPLETED';
  }

  private settlingMessages(steps: Extract<AiSdkOutcome, { steps: unknown }>['steps']): JsonObject[] {
    // A reused tool call id: the k-th declaration of it in the run was recorded under its k-th id,
    // and a step's results follow its declarations in order.
    const declarations = new Map<string, number>();
    return steps.flatMap((step) => {
      const recordedIds = new Map<string, string[]>();
      for (const { toolCallId } of step.toolCalls) {
        const k = declarations.get(toolCallId) ?? 0;
        declarations.set(toolCallId, k + 1);
        recordedIds.set(toolCallId, [...(recordedIds.get(toolCallId) ?? []), this.recording.toolCallIds.all(toolCallId)[k] ?? toolCallId]);
      }
      return step.content.flatMap((part) => {
        if (part.type !== 'tool-result' && part.type !== 'tool-error') return [];
        const toolCallId = recordedIds.get(part.toolCallId)?.shift() ?? part.toolCallId;
        if (part.type !== 'tool-error' || !this.bareErrors.has(toolCallId)) return [];
        return [{ type: 'tool', tool_call_id: toolCallId, name: part.toolName, status: 'error', content: errorText(part.error) }];
      });
    });
  }
}
