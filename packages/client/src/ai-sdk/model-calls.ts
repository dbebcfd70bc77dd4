import type { LanguageModelMiddleware } from 'ai';
import { randomUUID } from 'node:crypto';
import { errorJson, toJson } from '../json.js';
import type { RunRecording, ToolCallIds } from '../run-recording.js';
import type { DeclaredToolCallInput, JsonObject, JsonValue } from '../types.js';

type GenerateResult = Awaited<ReturnType<NonNullable<LanguageModelMiddleware['wrapGenerate']>>>;
type StreamResult = Awaited<ReturnType<NonNullable<LanguageModelMiddleware['wrapStream']>>>;
type Content = GenerateResult['content'][number];
type StreamPart = StreamResult['stream'] extends ReadableStream<infer Part> ? Part : never;
type ToolCallPart = Extract<Content, { type: 'tool-call' }>;

/** A model response as the audit records it, whether it was generated whole or streamed. */
interface ModelResponse {
  content: Content[];
  finishReason?: JsonValue;
  usage?: unknown;
  error?: unknown;
}

/**
 * The language-model middleware that records each model call of the run: started with the
 * prompt it was given, finished with its content, usage and the tool calls it declares (or
 * FAILED with its error, and the content a stream had sent before it broke, was aborted or was
 * cancelled). A streamed response is recorded finished when its `finish` part
 * comes, before the part is passed on: the SDK runs the step's tools only after that part, so
 * their starts are queued after the declaring model call.
 */
export function modelCallRecorder(recording: RunRecording): LanguageModelMiddleware {
  const start = async (model: { modelId: string }, prompt: unknown) => {
    const operationId = randomUUID();
    const event = recording.observe();
    await recording.write((lease) =>
      recording.client.recordModelStarted({ lease, operationId, model: model.modelId, input: { messages: toJson(prompt) }, ...event }),
    );
    return (response: ModelResponse) => {
      const ended = recording.observe();
      const failed = response.error !== undefined;
      // Declared now, before the SDK runs the tools, so that their executions find the ids. A failed
      // or stopped stream declares the calls that had arrived whole: the SDK still runs them if the
      // stream's finish part comes after all (a provider that does not stop at the abort).
      const toolCalls = declaredToolCalls(response.content, recording.toolCallIds);
      return recording.write((lease) =>
        recording.client.recordModelFinished({
          lease,
          operationId,
          status: failed ? 'FAILED' : 'COMPLETED',
          // A stream that failed keeps what it had streamed.
          output: failed && response.content.length === 0 ? undefined : { content: response.content.map(contentJson), finishReason: toJson(response.finishReason) },
          error: failed ? errorJson(response.error) : undefined,
          usage: failed ? undefined : toJson(response.usage),
          toolCalls,
          ...ended,
        }),
      );
    };
  };

  return {
    specificationVersion: 'v3',
    wrapGenerate: async ({ doGenerate, params, model }) => {
      const finish = await start(model, params.prompt);
      let result: GenerateResult;
      try {
        result = await doGenerate();
      } catch (error) {
        await finish({ content: [], error });
        throw error;
      }
      await finish({ content: result.content, finishReason: result.finishReason.unified, usage: result.usage });
      return result;
    },
    wrapStream: async ({ doStream, params, model }) => {
      const finish = await start(model, params.prompt);
      let result: StreamResult;
      try {
        result = await doStream();
      } catch (error) {
        await finish({ content: [], error });
        throw error;
      }
      return { ...result, stream: result.stream.pipeThrough(recordedStream(finish, params.abortSignal)) };
    },
  };
}

/** Passes a model stream through, collecting its response, and records it finished at its end. */
function recordedStream(finish: (response: ModelResponse) => Promise<void>, abortSignal: AbortSignal | undefined): TransformStream<StreamPart, StreamPart> {
  const response: ModelResponse & { content: Content[] } = { content: [] };
  const texts = new Map<string, { type: 'text' | 'reasoning'; text: string }>();
  let recorded = false;
  const record = async () => {
    if (recorded) return;
    recorded = true;
    abortSignal?.removeEventListener('abort', stopped);
    await finish(response);
  };
  // The user pressed Stop: the SDK stops reading the model's stream without cancelling it, so the
  // call is recorded here, FAILED with the abort and the text streamed so far, before the run ends.
  const stopped = () => {
    response.error ??= abortSignal?.reason;
    record().catch(() => {}); // a lost lease is the run's end to report
  };
  abortSignal?.addEventListener('abort', stopped, { once: true });
  // `cancel` is in Node's TransformStream (20.19 and later) but not yet in TypeScript's lib.
  const transformer: NonNullable<ConstructorParameters<typeof TransformStream<StreamPart, StreamPart>>[0]> & { cancel(reason: unknown): void } = {
    async transform(part, controller) {
      switch (part.type) {
        case 'text-start':
        case 'reasoning-start': {
          const text = { type: part.type === 'text-start' ? ('text' as const) : ('reasoning' as const), text: '' };
          texts.set(part.id, text);
          response.content.push(text as Content);
          break;
        }
        case 'text-delta':
        case 'reasoning-delta': {
          const text = texts.get(part.id);
          if (text) text.text += part.delta;
          break;
        }
        case 'tool-call':
        case 'tool-result':
        case 'file':
        case 'source':
          response.content.push(part);
          break;
        case 'error':
          response.error = part.error;
          break;
        case 'finish':
          response.finishReason = part.finishReason.unified;
          response.usage = part.usage;
          await record();
          break;
      }
      controller.enqueue(part);
    },
    // A stream that ended without a finish part (the provider's error part, say).
    async flush() {
      await record();
    },
    // A stream that broke (its source errored) or was stopped (an abort, the reader's cancel):
    // recorded FAILED with what it had streamed. Not awaited, so the error reaches the reader at
    // once; the run's end waits for the write.
    cancel(reason) {
      response.error ??= reason ?? new Error('The model stream was cancelled');
      stopped();
    },
  };
  return new TransformStream(transformer);
}

/** One content part as JSON, a tool call's input parsed. */
function contentJson(part: Content): JsonValue {
  if (part.type === 'tool-call') {
    return { type: 'tool-call', toolCallId: part.toolCallId, toolName: part.toolName, input: parsedInput(part.input) };
  }
  return toJson(part);
}

/** The tool calls the SDK will execute here; a provider-executed one never reaches a tool of this run. */
function declaredToolCalls(content: Content[], ids: ToolCallIds): DeclaredToolCallInput[] {
  const calls = content.filter((part): part is ToolCallPart => part.type === 'tool-call' && !part.providerExecuted);
  const recordedIds = ids.declare(calls.map((call) => call.toolCallId));
  return calls.map((call, index) => ({ id: recordedIds[index]!, name: call.toolName, args: parsedInput(call.input) }));
}

/** A tool call's input as the model declared it: JSON text, parsed (kept as text when it is not JSON). */
function parsedInput(input: string): JsonObject | JsonValue {
  try {
    return JSON.parse(input) as JsonValue;
  } catch {
    return input;
  }
}
