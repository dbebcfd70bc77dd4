import type { StepResult, Tool, ToolExecutionOptions, ToolSet } from 'ai';
import { errorJson, toJson } from '../json.js';
import { AuditLeaseLostError } from '../lease-lost.js';
import type { RunRecording } from '../run-recording.js';
import type { JsonObject } from '../types.js';

type Execute = NonNullable<Tool['execute']>;

/**
 * The tools with each `execute` recorded: started with the input it received (after the
 * SDK's schema parsing, so defaults show against what the model declared), finished with its
 * output, or a bare error when it throws. The SDK hands a throw back to the model as a tool
 * error; `bareErrors` keeps them so the run's end can settle them. Tools without `execute`
 * are left as they are. A streaming tool (one whose execute returns an AsyncIterable, declared
 * `async function*` or not) is recorded finished with its last value, which the SDK takes as its
 * output.
 */
export function recordedTools<TOOLS extends ToolSet>(recording: RunRecording, tools: TOOLS, bareErrors: Map<string, string>): TOOLS {
  const recorded: ToolSet = {};
  for (const [name, tool] of Object.entries(tools)) {
    recorded[name] = tool.execute ? { ...tool, execute: recordedExecute(recording, name, tool.execute, bareErrors) } : tool;
  }
  return recorded as TOOLS;
}

function recordedExecute(recording: RunRecording, name: string, execute: Execute, bareErrors: Map<string, string>): Execute {
  // Each execution is recorded under the id its declaration was recorded under (see ToolCallIds).
  const started = (input: unknown, toolCallId: string) => recordStart(recording, name, input, toolCallId);
  const finished = (output: unknown, toolCallId: string) =>
    recordFinish(recording, { type: 'tool', tool_call_id: toolCallId, name, status: 'success', content: typeof output === 'string' ? output : toJson(output) });
  const failed = async (error: unknown, toolCallId: string) => {
    // Our own write found the lease gone: that is not the tool's error, and nothing can be recorded.
    if (error instanceof AuditLeaseLostError) throw error;
    const event = recording.observe();
    bareErrors.set(toolCallId, name);
    await recording.write((lease) => recording.client.recordToolError({ lease, toolCallId, error: errorJson(error), ...event }));
    throw error;
  };
  const recordedId = (options: ToolExecutionOptions) => recording.toolCallIds.current(options.toolCallId);

  /** Passes a streaming tool's values on; its last one, which the SDK takes as its output, is recorded as the finish. */
  async function* recordedValues(values: AsyncIterable<unknown>, toolCallId: string) {
    let last: unknown;
    try {
      for await (const value of values) {
        last = value;
        yield value;
      }
    } catch (error) {
      return failed(error, toolCallId);
    }
    await finished(last, toolCallId);
  }
  const recordedOutput = async (output: PromiseLike<unknown> | unknown, toolCallId: string) => {
    let value: unknown;
    try {
      value = await output;
    } catch (error) {
      return failed(error, toolCallId);
    }
    await finished(value, toolCallId);
    return value;
  };

  if (isFunctionOfKind(execute, 'AsyncGeneratorFunction')) {
    return async function* (input: unknown, options: ToolExecutionOptions) {
      const toolCallId = recordedId(options);
      await started(input, toolCallId);
      yield* recordedValues(execute(input, options) as AsyncIterable<unknown>, toolCallId);
    };
  }
  if (isFunctionOfKind(execute, 'AsyncFunction')) {
    return async (input: unknown, options: ToolExecutionOptions) => {
      const toolCallId = recordedId(options);
      await started(input, toolCallId);
      return recordedOutput(execute(input, options), toolCallId);
    };
  }
  // Any other function (a wrapper, transpiled code) may hand back an AsyncIterable, which the SDK
  // streams only if it gets it back at once: so execute is called as soon as its start is queued,
  // and what it returned says how it is recorded.
  return (input: unknown, options: ToolExecutionOptions) => {
    recording.stopIfLeaseLost();
    const toolCallId = recordedId(options);
    const start = started(input, toolCallId);
    let returned: unknown;
    try {
      returned = execute(input, options);
    } catch (error) {
      return start.then(() => failed(error, toolCallId));
    }
    if (isAsyncIterable(returned)) {
      return (async function* () {
        await start;
        yield* recordedValues(returned, toolCallId);
      })();
    }
    return start.then(
      () => recordedOutput(returned, toolCallId),
      (error: unknown) => {
        Promise.resolve(returned).catch(() => {}); // the recording's error is the one thrown
        throw error;
      },
    );
  };
}

function recordStart(recording: RunRecording, name: string, input: unknown, toolCallId: string): Promise<void> {
  const event = recording.observe();
  return recording.write((lease) => recording.client.recordToolStarted({ lease, toolCallId, name, effectiveInput: inputJson(input), ...event }));
}

function recordFinish(recording: RunRecording, envelope: JsonObject & { tool_call_id: string }): Promise<void> {
  const event = recording.observe();
  return recording.write((lease) => recording.client.recordToolFinished({ lease, toolCallId: envelope.tool_call_id, output: envelope, ...event }));
}

/**
 * The calls of a step that the SDK refused before running them (a tool it does not have, input
 * its schema refuses): the model is told the error, and the timeline shows each as a tool that
 * started and failed at once with that error, on the input the model gave.
 */
export async function recordCallsNeverRun(recording: RunRecording, step: StepResult<ToolSet>): Promise<void> {
  const writes = step.toolCalls.flatMap((call) => {
    const told = call.invalid && step.content.find((part) => part.type === 'tool-error' && part.toolCallId === call.toolCallId);
    if (!told || told.type !== 'tool-error') return [];
    const toolCallId = recording.toolCallIds.current(call.toolCallId);
    return [
      recordStart(recording, call.toolName, call.input, toolCallId),
      recordFinish(recording, { type: 'tool', tool_call_id: toolCallId, name: call.toolName, status: 'error', content: errorText(told.error) }),
    ];
  });
  await Promise.all(writes);
}

/** The text the SDK hands the model for a tool's error (its `getErrorMessage`): what the settled ToolMessage says. */
export function errorText(error: unknown): string {
  if (error == null) return 'unknown error';
  if (typeof error === 'string') return error;
  if (error instanceof Error) return error.message;
  return JSON.stringify(toJson(error));
}

function isFunctionOfKind(fn: unknown, kind: 'AsyncFunction' | 'AsyncGeneratorFunction'): boolean {
  return typeof fn === 'function' && fn.constructor?.name === kind;
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return value != null && typeof (value as AsyncIterable<unknown>)[Symbol.asyncIterator] === 'function';
}

/** A tool's input as the JSON object the server stores as effective input. */
function inputJson(input: unknown): JsonObject {
  const json = toJson(input);
  return json !== null && typeof json === 'object' && !Array.isArray(json) ? json : { input: json };
}
