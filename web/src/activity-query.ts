// The Activity view's documents, on their own so that bench/tool-order-bytes.ts measures the
// view the page asks for (activity.tsx imports styles Node cannot load).
import { graphql } from './generated/graphql/index.js';

/** How many rows the per-tool table asks for at first, and how many more at each "show more". */
export const TOOLS_PAGE = 20;

export const ACTIVITY_AUDIT_FIELDS = graphql(`
  fragment PageActivityAudit on ToolAudit { id name startedAt finishedAt error awaitingRunTerminal run { id leaseExpiresAt thread { id title } } }`);

// Only the tools the table shows, in the order clicked: the server orders them (300 tools were 41 kB of a 78 kB view).
export const TOOL_ACTIVITY = graphql(`
  subscription PageToolActivity($windowSeconds: Int, $name: String, $toolsFirst: Int, $toolsOrder: ToolActivityOrder) {
    toolActivity(windowSeconds: $windowSeconds, name: $name) {
      at since runningCount
      running(first: 50) { ...PageActivityAudit }
      recentFailures(first: 20) { ...PageActivityAudit }
      toolCount
      tools(first: $toolsFirst, orderBy: $toolsOrder) { name calls running failureRate otherEnded p50DurationMs p95DurationMs maxDurationMs }
      longest: tools(first: 1, orderBy: { field: MAX }) { maxDurationMs }
      buckets { start started completed failed otherEnded }
    }
  }`);

/** Every tool name of the view's window, for its Tool filter's suggestions: the live view lists only the table's rows. */
export const TOOL_NAMES = graphql(`
  query PageToolNames($windowSeconds: Int) { toolActivity(windowSeconds: $windowSeconds) { tools(orderBy: { field: NAME }) { name } } }`);
