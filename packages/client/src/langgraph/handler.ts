import type { Serialized } from '@langchain/core/load/serializable';
import { ToolMessage, type BaseMessage } from '@langchain/core/messages';
import { ChatGenerationChunk, type LLMResult, type ChatGeneration } from '@langchain/core/outputs';
import type { HandleLLMNewTokenCallbackFields, NewTokenIndices } from '@langchain/core/callbacks/base';
import { GraphCallbackHandler, isGraphInterrupt, type GraphInterruptEvent } from '@langchain/langgraph';
import type { AuditClient } from '../audit-client.js';
import { isAuditApiError, type AuditApiError } from '../errors.js';
import { AuditLeaseLostError } from '../lease-lost.js';
import { SequenceCounter, readClock } from '../clock.js';
import type { JsonObject, LeaseInput } from '../types.js';
import { errorJson, toJson } from '../json.js';
import { declaredToolCalls, effectiveInput, messageJson, toolOutputEnvelope } from './messages.js';
import type { RunWriter } from '../run-writer.js';
import { ToolCallIds } from '../run-recording.js';

/** What the handler writes through: the run's client, its current lease and its writer. */
export interface RecordingTarget {
  client: AuditClient;
  lease: () => LeaseInput;
  writer: RunWriter;
  /** Called for a tool that ran again for a tool call that had already ended (see ToolRerun). */
  onToolRerun?: (rerun: ToolRerun) => void;
  /** The ids the run's tool calls are recorded under (see ToolCallIds); the run's own by default. */
  toolCallIds?: ToolCallIds;
}

/**
 * A tool the graph ran again for a tool call whose execution had already ended: on a resume,
 * LangGraph re-runs every tool of the step that paused, those that had completed included. The
 * server keeps the first execution and refuses the new start (INVALID_TRANSITION: an ended
 * ToolCall never starts again), so this second run of the tool, and any side effect it had, is
 * on no timeline: this is how it is seen.
 */
export interface ToolRerun {
  toolCallId: string;
  name: string;
  /** The server's refusal of the start. */
  cause: AuditApiError;
}

/** A tool run recorded as started: `rerun` when its start was refused (see ToolRerun), `ended` once it returned. */
interface RecordedTool {
  toolCallId: string;
  name: string;
  rerun?: boolean;
  ended?: boolean;
}

/**
 * The namespace of an event: the parent graph tasks above the node it ran in. Empty for the
 * root graph's nodes; a subgraph's (sub-agent's) nodes carry the task that ran the subgraph.
 */
export function eventNamespace(metadata: Record<string, unknown> | undefined): string[] {
  const checkpointNs = metadata?.langgraph_checkpoint_ns;
  return typeof checkpointNs === 'string' && checkpointNs !== '' ? checkpointNs.split('|').slice(0, -1) : [];
}

/**
 * A LangChain callback handler that records one graph invocation as one audit run: model
 * calls with the tool calls they declare, each tool's start with the input it received and its
 * end (a ToolMessage, `status: "error"` for a controlled failure) or bare error (a throw or an
 * interrupt). Sequences come from one counter per run and `observedAt`/`clock` are read when
 * the callback fires. Events of subgraphs are not sent (the server accepts root events only).
 */
export class AuditCallbackHandler extends GraphCallbackHandler {
  override name = 'AgentAuditHandler';
  private readonly sequence = new SequenceCounter(1);
  /** Callback run ids of the model calls recorded as started and not yet ended -> what they streamed so far. */
  private readonly models = new Map<string, { streamed?: ChatGenerationChunk }>();
  /** Callback run id -> tool call id, for the tools recorded as started. */
  private readonly tools = new Map<string, RecordedTool>();
  /** Tool call id -> the tool recorded as started for it in this run (a retried node's attempts share it). */
  private readonly started = new Map<string, RecordedTool>();
  /** Tool calls of this run that ended in a bare error: their final ToolMessage settles them. */
  readonly bareErrors = new Set<string>();
  /** Tool calls declared in this run (by the id they are recorded under): what a call that never ran is recorded with. */
  private readonly declared = new Map<string, { name: string; args?: unknown }>();
  /** Callback run ids of the root graph's nodes: their outputs are what each step added to the state. */
  private readonly rootNodes = new Set<string>();
  /** Tool calls whose start the server refused as already ended (see ToolRerun): nothing more is sent for them. */
  private readonly reruns = new Set<string>();
  /** Set when the root graph paused on interrupt(). */
  interrupt: GraphInterruptEvent | undefined;
  readonly toolCallIds: ToolCallIds;

  constructor(private readonly target: RecordingTarget) {
    super();
    this.toolCallIds = target.toolCallIds ?? new ToolCallIds();
    // Awaited, so the agent waits for a write (at most the writer's budget) and sees a lost lease;
    // raised, so that AuditLeaseLostError stops the agent.
    this.awaitHandlers = true;
    this.raiseError = true;
    this.ignoreRetriever = true;
  }

  override async handleChatModelStart(
    llm: Serialized,
    messages: BaseMessage[][],
    runId: string,
    _parentRunId?: string,
    _extraParams?: Record<string, unknown>,
    _tags?: string[],
    metadata?: Record<string, unknown>,
    runName?: string,
  ): Promise<void> {
    if (eventNamespace(metadata).length > 0) return this.target.writer.throwIfLost();
    const event = this.observe();
    const model = modelName(llm, metadata, runName);
    this.models.set(runId, {});
    await this.write((lease) =>
      this.target.client.recordModelStarted({
        lease,
        operationId: runId,
        model,
        input: { messages: (messages[0] ?? []).map(messageJson) },
        ...event,
      }),
    );
  }

  /** Collects a streamed answer's chunks, so a call that breaks or is stopped keeps what it had said. Nothing is sent. */
  override handleLLMNewToken(_token: string, _idx: NewTokenIndices, runId: string, _parentRunId?: string, _tags?: string[], fields?: HandleLLMNewTokenCallbackFields): void {
    const model = this.models.get(runId);
    const chunk = fields?.chunk;
    if (!model || !(chunk instanceof ChatGenerationChunk)) return;
    model.streamed = model.streamed ? model.streamed.concat(chunk) : chunk;
  }

  override async handleLLMEnd(output: LLMResult, runId: string): Promise<void> {
    if (!this.models.delete(runId)) return;
    const event = this.observe();
    const message = (output.generations[0]?.[0] as ChatGeneration | undefined)?.message;
    // Declared now, before the graph runs the tools, so that their starts find the ids.
    const declared = declaredToolCalls(message);
    const recordedIds = this.toolCallIds.declare(declared.map((call) => call.id));
    const toolCalls = declared.map((call, index) => ({ ...call, id: recordedIds[index]! }));
    for (const call of toolCalls) this.declared.set(call.id, call);
    await this.writeEnd((lease) =>
      this.target.client.recordModelFinished({
        lease,
        operationId: runId,
        status: 'COMPLETED',
        output: message ? messageJson(message) : toJson(output.generations),
        usage: message && 'usage_metadata' in message ? toJson(message.usage_metadata) : toJson(output.llmOutput?.tokenUsage),
        toolCalls,
        ...event,
      }),
    );
  }

  override async handleLLMError(error: unknown, runId: string): Promise<void> {
    await this.modelFailed(runId, error);
  }

  /**
   * Records the model calls still streaming FAILED with `reason` (the abort of the invocation's
   * signal), each with what it had streamed: LangChain tells a model call of the abort only at
   * its next chunk, after the graph has already rejected and the run ended.
   */
  stopModelCalls(reason: unknown): void {
    for (const runId of [...this.models.keys()]) this.modelFailed(runId, reason).catch(() => {}); // a write error is the run's end to report
  }

  /** A model call FAILED with its error, and the message it had streamed (a ModelAbortError carries it too). */
  private async modelFailed(runId: string, error: unknown): Promise<void> {
    const model = this.models.get(runId);
    if (!this.models.delete(runId)) return;
    const event = this.observe();
    const partial = (error as { partialOutput?: BaseMessage } | null)?.partialOutput ?? model?.streamed?.message;
    await this.writeEnd((lease) =>
      this.target.client.recordModelFinished({
        lease,
        operationId: runId,
        status: 'FAILED',
        output: partial ? messageJson(partial) : undefined,
        error: errorJson(error),
        ...event,
      }),
    );
  }

  override async handleToolStart(
    tool: Serialized,
    input: string,
    runId: string,
    _parentRunId?: string,
    _tags?: string[],
    metadata?: Record<string, unknown>,
    runName?: string,
    declaredId?: string,
  ): Promise<void> {
    // A tool run without a tool call id (called directly, not for a model's tool call) has nothing to bind to.
    if (!declaredId || eventNamespace(metadata).length > 0) return this.target.writer.throwIfLost();
    const toolCallId = this.toolCallIds.current(declaredId);
    const earlier = this.started.get(toolCallId);
    if (earlier) {
      // A node retried by its retryPolicy runs the tool again in this run: the server keeps one
      // audit per tool call and run, so this attempt is not started again; its end closes that
      // audit unless an earlier attempt ended it.
      this.tools.set(runId, earlier.ended ? { ...earlier, rerun: true } : earlier);
      return this.target.writer.throwIfLost();
    }
    const event = this.observe();
    const name = runName ?? tool.id.at(-1) ?? 'tool';
    const recorded: RecordedTool = { toolCallId, name };
    this.tools.set(runId, recorded);
    this.started.set(toolCallId, recorded);
    await this.write(async (lease) => {
      try {
        await this.target.client.recordToolStarted({ lease, toolCallId, name, effectiveInput: effectiveInput(input), ...event });
      } catch (error) {
        // Expected on a resume (see ToolRerun), so not a write error; its end is not sent either.
        if (!isAuditApiError(error, 'INVALID_TRANSITION')) throw error;
        recorded.rerun = true;
        this.reruns.add(toolCallId);
        this.target.onToolRerun?.({ toolCallId, name, cause: error });
      }
    });
  }

  override async handleToolEnd(output: unknown, runId: string): Promise<void> {
    const tool = this.tools.get(runId);
    if (!tool) return;
    tool.ended = true;
    this.bareErrors.delete(tool.toolCallId); // an earlier attempt's error, when a retried node's tool succeeded
    const event = this.observe();
    const envelope = toolOutputEnvelope(output, tool.toolCallId, tool.name);
    await this.writeEnd(async (lease) => {
      if (!tool.rerun) await this.target.client.recordToolFinished({ lease, toolCallId: tool.toolCallId, output: envelope, ...event });
    });
  }

  override async handleToolError(error: unknown, runId: string): Promise<void> {
    const tool = this.tools.get(runId);
    if (!tool) return;
    // A retried attempt failing again: the first attempt's error stays the one recorded.
    if (this.bareErrors.has(tool.toolCallId)) return;
    const event = this.observe();
    const recorded: JsonObject = isGraphInterrupt(error)
      ? { name: 'GraphInterrupt', message: 'interrupted', interrupts: toJson(error.interrupts) }
      : errorJson(error);
    this.bareErrors.add(tool.toolCallId);
    await this.writeEnd(async (lease) => {
      if (tool.rerun) this.bareErrors.delete(tool.toolCallId);
      else await this.target.client.recordToolError({ lease, toolCallId: tool.toolCallId, error: recorded, ...event });
    });
  }

  override handleChainStart(
    _chain: Serialized,
    _inputs: unknown,
    runId: string,
    _runType?: string,
    _tags?: string[],
    metadata?: Record<string, unknown>,
  ): void {
    if (typeof metadata?.langgraph_node === 'string' && eventNamespace(metadata).length === 0) this.rootNodes.add(runId);
  }

  /**
   * A call ToolNode never ran (a tool it does not have, input the tool's schema refuses) gets no
   * tool callback, only an error ToolMessage in the node's output: it is recorded as a tool that
   * started and failed at once with that message, on the input the model declared. Only a node's
   * output is read (the graph's own is the whole state, whose older messages may carry reused ids).
   */
  override async handleChainEnd(outputs: unknown, runId: string): Promise<void> {
    if (!this.rootNodes.delete(runId)) return;
    for (const message of errorToolMessagesIn(outputs)) {
      const toolCallId = this.toolCallIds.current(message.tool_call_id);
      const call = this.declared.get(toolCallId);
      if (!call || this.started.has(toolCallId)) continue;
      const recorded: RecordedTool = { toolCallId, name: call.name, ended: true };
      this.started.set(toolCallId, recorded);
      const [start, end] = [this.observe(), this.observe()];
      const output = toolOutputEnvelope(message, toolCallId, call.name);
      await this.write((lease) => this.target.client.recordToolStarted({ lease, toolCallId, name: call.name, effectiveInput: effectiveInput(call.args), ...start }));
      await this.writeEnd((lease) => this.target.client.recordToolFinished({ lease, toolCallId, output, ...end }));
    }
  }

  override handleChainError(_error: unknown, runId: string): void {
    this.rootNodes.delete(runId);
  }

  /**
   * Sends the verdict of a tool that ended in a bare error: the error ToolMessage the graph's
   * state holds for it, as the tool's finish (FAILED with it). For a run that pauses: the
   * server settles bare errors from the state only at a COMPLETED or FAILED end, and the resume
   * never runs that tool again.
   */
  async settleBareError(toolMessage: JsonObject): Promise<void> {
    const toolCallId = String(toolMessage.tool_call_id);
    if (!this.bareErrors.delete(toolCallId)) return;
    const event = this.observe();
    await this.write(async (lease) => {
      if (!this.reruns.has(toolCallId)) await this.target.client.recordToolFinished({ lease, toolCallId, output: toolMessage, ...event });
    });
  }

  override handleInterrupt(event: GraphInterruptEvent): void {
    this.interrupt = event;
  }

  /** The sequence number and clock readings of an event, taken when its callback fires. */
  private observe() {
    return { sequence: this.sequence.next(), observedAt: new Date(), clock: readClock(this.target.client.clockId) };
  }

  private write(send: (lease: LeaseInput) => Promise<unknown>): Promise<void> {
    return this.target.writer.submit(() => send(this.target.lease()));
  }

  /**
   * The write of an end (of a model call or a tool). A lost lease is not thrown from here:
   * LangChain prints every error a handler throws, and the agent is already stopped the
   * documented way (the run's signal aborts, the next start callback and `finish` throw
   * AuditLeaseLostError).
   */
  private async writeEnd(send: (lease: LeaseInput) => Promise<unknown>): Promise<void> {
    if (this.target.writer.leaseLost) return;
    await this.write(send).catch((error: unknown) => {
      if (!(error instanceof AuditLeaseLostError)) throw error;
    });
  }
}

/** The error ToolMessages of a node's output (its `messages` update, or a list of them). */
function errorToolMessagesIn(outputs: unknown): ToolMessage[] {
  if (ToolMessage.isInstance(outputs)) return outputs.status === 'error' ? [outputs] : [];
  if (Array.isArray(outputs)) return outputs.flatMap(errorToolMessagesIn);
  const messages = (outputs as { messages?: unknown } | null)?.messages;
  return Array.isArray(messages) ? messages.flatMap(errorToolMessagesIn) : [];
}

function modelName(llm: Serialized, metadata: Record<string, unknown> | undefined, runName: string | undefined): string {
  const declared = metadata?.ls_model_name;
  return typeof declared === 'string' && declared !== '' ? declared : (runName ?? llm.id.at(-1) ?? 'chat-model');
}
