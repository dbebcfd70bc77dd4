import type { Tool, ToolExecutionOptions, ToolSet } from 'ai';
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
 * are left as they are. A streaming tool (an async generator) is recorded finished with its
 * last value, which the SDK takes as its output.
 */
export function recordedTools<TOOLS extends ToolSet>(recording: RunRecording, tools: TOOLS, bareErrors: Map<string, string>): TOOLS {
  const recorded: ToolSet = {};
  for (const [name, tool] of Object.entries(tools)) {
    recorded[name] = tool.execute ? { ...tool, execute: recordedExecute(recording, name, tool.execute, bareErrors) } : tool;
  }
  return recorded as TOOLS;
}

function recordedExecute(recording: RunRecording, name: string, execute: Execute, bareErrors: Map<string, string>): Execute {
  const started = (input: unknown, { toolCallId }: ToolExecutionOptions) => {
    const event = recording.observe();
    return recording.write((lease) => recording.client.recordToolStarted({ lease, toolCallId, name, effectiveInput: inputJson(input), ...event }));
  };
  const finished = (output: unknown, { toolCallId }: ToolExecutionOptions) => {
    const event = recording.observe();
    const envelope: JsonObject = { type: 'tool', tool_call_id: toolCallId, name, status: 'success', content: typeof output === 'string' ? output : toJson(output) };
    return recording.write((lease) => recording.client.recordToolFinished({ lease, toolCallId, output: envelope, ...event }));
  };
  const failed = async (error: unknown, { toolCallId }: ToolExecutionOptions) => {
    // Our own write found the lease gone: that is not the tool's error, and nothing can be recorded.
    if (error instanceof AuditLeaseLostError) throw error;
    const event = recording.observe();
    bareErrors.set(toolCallId, name);
    await recording.write((lease) => recording.client.recordToolError({ lease, toolCallId, error: errorJson(error), ...event }));
    throw error;
  };

  if (isAsyncGeneratorFunction(execute)) {
    return async function* (input: unknown, options: ToolExecutionOptions) {
      await started(input, options);
      let last: unknown;
      try {
        for await (const value of execute(input, options) as AsyncIterable<unknown>) {
          last = value;
          yield value;
        }
      } catch (error) {
        return failed(error, options);
      }
      await finished(last, options);
    };
  }
  return async (input: unknown, options: ToolExecutionOptions) => {
    await started(input, options);
    let output: unknown;
    try {
      output = await execute(input, options);
    } catch (error) {
      return failed(error, options);
    }
    await finished(output, options);
    return output;
  };
}

function isAsyncGeneratorFunction(fn: unknown): boolean {
  return typeof fn === 'function' && fn.constructor?.name === 'AsyncGeneratorFunction';
}

/** A tool's input as the JSON object the server stores as effective input. */
function inputJson(input: unknown): JsonObject {
  const json = toJson(input);
  return json !== null && typeof json === 'object' && !Array.isArray(json) ? json : { input: json };
}
