// The tool-call ledger: every tool call the thread's model calls declared, whether it ran or not,
// with what a debugger hunts for. Pure: no DOM, no network.
import { diff } from 'jsondiffpatch';
import type { PageToolCallFieldsFragment } from './generated/graphql/graphql.js';
import type { AuditView, RunView } from './timeline.js';

/** A ToolCall of the projection (`Run.toolCalls`): one per declared call, run or not. */
export type ToolCallView = PageToolCallFieldsFragment;

export type LedgerCase = 'never run' | 'awaiting verdict' | 'closed by run end' | 'running';

export interface LedgerEntry {
  key: string;
  /** The run whose model call declared it. */
  runId: string;
  toolCallId: string;
  name: string;
  /** The execution's status when it ran (its audit), else the projection's (PENDING, CANCELLED). */
  status: string;
  durationMs: number | null;
  declaredInput: unknown;
  effectiveInput: unknown;
  /** The effective input differs from the declared arguments (null: it never ran). */
  differs: boolean | null;
  cases: LedgerCase[];
  /** While running: the time left on the lease of the run it runs in. */
  leaseLeftMs: number | null;
  /** The tool audit of its execution, when loaded. */
  auditId: string | null;
}

/** Statuses a run's end gives what it leaves open. */
const CLOSED_BY_RUN_END = new Set(['ABANDONED', 'INTERRUPTED', 'CANCELLED']);

/** Runs in creation order, each with its tool calls in declaration order. */
export function buildLedger(runs: readonly RunView[], toolCalls: ReadonlyMap<string, readonly ToolCallView[]>, audits: Iterable<AuditView>, now: number): LedgerEntry[] {
  const executions = new Map<string, AuditView>();
  for (const audit of audits) if (audit.__typename === 'ToolAudit' && audit.toolCall?.id) executions.set(audit.toolCall.id, audit);
  const runsById = new Map(runs.map((run) => [run.id, run]));
  const entries: LedgerEntry[] = [];
  for (const run of runs) {
    for (const call of toolCalls.get(run.id) ?? []) {
      const audit = executions.get(call.id);
      const ran = Boolean(audit) || call.status !== 'PENDING' && call.status !== 'CANCELLED' || call.effectiveInput != null;
      const cases: LedgerCase[] = [];
      if (!ran) cases.push('never run');
      if (audit?.awaitingRunTerminal) cases.push('awaiting verdict');
      const status = audit?.status ?? call.status;
      if (CLOSED_BY_RUN_END.has(status) || (!ran && call.status === 'CANCELLED')) cases.push('closed by run end');
      const running = status === 'RUNNING' && !audit?.awaitingRunTerminal;
      if (running) cases.push('running');
      const executedIn = audit ? runsById.get(audit.runId) : run;
      const leaseLeftMs =
        running && executedIn?.status === 'RUNNING' && executedIn.leaseExpiresAt ? Date.parse(executedIn.leaseExpiresAt) - now : null;
      entries.push({
        key: call.id,
        runId: run.id,
        toolCallId: call.toolCallId,
        name: call.name,
        status,
        durationMs: audit?.durationMs ?? call.durationMs,
        declaredInput: call.declaredInput,
        effectiveInput: call.effectiveInput,
        differs: ran && call.effectiveInput != null ? diff(call.declaredInput ?? null, call.effectiveInput) !== undefined : null,
        cases,
        leaseLeftMs,
        auditId: audit?.id ?? null,
      });
    }
  }
  return entries;
}

export interface LedgerFilter {
  name: string;
  status: string;
  /** A case, or '' for every entry. */
  case: string;
}

export const filterLedger = (entries: readonly LedgerEntry[], filter: LedgerFilter) =>
  entries.filter(
    (entry) =>
      (!filter.name || entry.name === filter.name) &&
      (!filter.status || entry.status === filter.status) &&
      (!filter.case || entry.cases.includes(filter.case as LedgerCase)),
  );
