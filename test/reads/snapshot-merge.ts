/**
 * The merge rule of docs/debug-ui.md, as a debug UI would write it: a fetched `threadAudits`
 * snapshot kept current with `auditChanged` events.
 */

export interface ToolCallView {
  id: string;
  [field: string]: unknown;
}

export interface AuditView {
  id: string;
  runId: string;
  role: 'ASSISTANT' | 'TOOL';
  operationId: string;
  sequence: string;
  finishedSequence: string | null;
  status: string;
  toolCall?: ToolCallView;
  toolCalls?: ToolCallView[];
  [field: string]: unknown;
}

export interface Timeline {
  items: AuditView[];
  truncated: boolean;
  /** The thread's run ids in creation order (`thread { runs { id } }`). */
  runOrder: string[];
}

/** Closed audits never change again; a bare error is further along than a plain start. */
const progress = (audit: AuditView) => (audit.status !== 'RUNNING' ? 2 : audit.finishedSequence !== null ? 1 : 0);

/** The server's order: run creation, then sequence, then model before tool, then id. */
function compare(timeline: Timeline, a: AuditView, b: AuditView): number {
  const run = timeline.runOrder.indexOf(a.runId) - timeline.runOrder.indexOf(b.runId);
  if (run !== 0) return run;
  const sequence = BigInt(a.sequence) - BigInt(b.sequence);
  if (sequence !== 0n) return sequence < 0n ? -1 : 1;
  if (a.role !== b.role) return a.role === 'ASSISTANT' ? -1 : 1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** Copies a ToolCall the event carries onto every place the timeline holds it. */
function patchToolCall(item: AuditView, toolCall: ToolCallView): AuditView {
  if (item.toolCall?.id === toolCall.id) return { ...item, toolCall };
  if (item.toolCalls?.some((held) => held.id === toolCall.id)) {
    return { ...item, toolCalls: item.toolCalls.map((held) => (held.id === toolCall.id ? toolCall : held)) };
  }
  return item;
}

/**
 * Applies one event. `runOrder` must already hold the event's run (refresh it from
 * `thread { runs { id } }` when an event names a run you have not seen).
 */
export function mergeAuditEvent(timeline: Timeline, event: AuditView): Timeline {
  const held = timeline.items.find((item) => item.id === event.id);
  // A delivery that overtook a newer read must not move an audit (or its ToolCall) backwards.
  if (held && progress(event) < progress(held)) return timeline;
  const items = event.toolCall ? timeline.items.map((item) => patchToolCall(item, event.toolCall!)) : timeline.items;
  if (held) return { ...timeline, items: items.map((item) => (item.id === event.id ? event : item)) };
  // Older than the oldest entry of a truncated snapshot: outside the window, so not shown.
  const [oldest] = items;
  if (timeline.truncated && oldest && compare(timeline, event, oldest) < 0) return { ...timeline, items };
  return { ...timeline, items: [...items, event].sort((a, b) => compare(timeline, a, b)) };
}
