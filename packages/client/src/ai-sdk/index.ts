// The Vercel AI SDK adapter of the typed client: its own entry point, so only runtimes that use
// it load `ai` (an optional peer dependency).
export { AiSdkAudit, AuditedAiRun, type AiSdkOutcome, type FinishedStream, type RecordableOptions, type WrappableModel } from './recorder.js';
export { modelCallRecorder } from './model-calls.js';
export { recordedTools } from './tool-calls.js';
export { AuditLeaseLostError } from '../lease-lost.js';
export { RunInterruption, ToolCallIds, type FinishedRun, type RecordingOptions } from '../run-recording.js';
