// The LangGraph.js adapter of the typed client: its own entry point, so only runtimes that use
// it load @langchain/core and @langchain/langgraph (optional peer dependencies).
export { AuditCallbackHandler, eventNamespace, type RecordingTarget, type ToolRerun } from './handler.js';
export { AuditLeaseLostError } from '../lease-lost.js';
export {
  AuditedRun,
  LangGraphAudit,
  type InvocationOutcome,
  type InvokableGraph,
  type LangGraphAuditOptions,
} from './recorder.js';
export { messageJson } from './messages.js';
export { RunInterruption, ToolCallIds, type FinishedRun, type RecordingOptions } from '../run-recording.js';
