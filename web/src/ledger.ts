// The tool-call ledger as the page shows it. The entries and their cases come from the server's
// one rule (toolCallLedger, src/domain/tool-call-ledger.ts); this only formats them. Pure: no
// DOM, no network.
import type { ToolCallLedgerCase, ToolCallLedgerQuery, ToolCallLedgerStatus } from './generated/graphql/graphql.js';
import { declaredRowKey } from './timeline.js';

export type LedgerEntry = ToolCallLedgerQuery['toolCallLedger']['edges'][number]['node'];

export const LEDGER_CASE_LABELS: Record<ToolCallLedgerCase, string> = {
  NEVER_RUN: 'never run',
  PENDING: 'pending',
  AWAITING_VERDICT: 'awaiting verdict',
  CLOSED_BY_RUN_END: 'closed by run end',
  RUNNING: 'running',
};

export const LEDGER_STATUSES: ToolCallLedgerStatus[] = ['PENDING', 'RUNNING', 'COMPLETED', 'FAILED', 'CANCELLED', 'INTERRUPTED', 'ABANDONED'];

export interface LedgerFilter {
  /** A tool name, or '' for every tool. */
  name: string;
  status: ToolCallLedgerStatus | '';
  case: ToolCallLedgerCase | '';
}

/** While it runs: the time left on the lease of the run it runs in (negative once expired). */
export const leaseLeftMs = (entry: LedgerEntry, now: number): number | null =>
  entry.leaseExpiresAt ? Date.parse(entry.leaseExpiresAt) - now : null;

/** Its measured duration; while it runs, the time since it started. */
export const shownDurationMs = (entry: LedgerEntry, now: number): number | null =>
  entry.durationMs ?? (entry.cases.includes('RUNNING') && entry.startedAt ? Math.max(0, now - Date.parse(entry.startedAt)) : null);

/** The row to open in the thread's timeline: its execution, else its own row under the model call that declared it. */
export const rowToOpen = (entry: LedgerEntry): string => entry.auditId ?? declaredRowKey(entry.id);
