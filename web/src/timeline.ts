// The timeline's data and its one pure layout function: no DOM, no network.

export interface RunView {
  id: string;
  status: string;
  leaseOwner: string | null;
  leaseEpoch: number;
  leaseExpiresAt: string | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  error: unknown;
  resumedFrom: { id: string } | null;
}

export interface AuditView {
  __typename: 'ModelAudit' | 'ToolAudit';
  id: string;
  runId: string;
  operationId: string;
  sequence: string;
  finishedSequence: string | null;
  status: string;
  startedAt: string | null;
  finishedAt: string | null;
  durationMs: number | null;
  error: unknown;
  output: unknown;
  // ModelAudit
  model?: string | null;
  input?: unknown;
  // ToolAudit
  name?: string;
  toolCallId?: string;
  effectiveInput?: unknown;
  awaitingRunTerminal?: boolean;
  toolCall?: { declaredInput: unknown; status: string };
  declaredBy?: { id: string } | null;
}

/** Closed audits never change again; a bare error is further along than a plain start. */
const auditProgress = (audit: AuditView) => (audit.status !== 'RUNNING' ? 2 : audit.finishedSequence !== null ? 1 : 0);
const runProgress = (run: RunView) =>
  run.status === 'QUEUED' ? 0 : run.status === 'RUNNING' ? 1 + run.leaseEpoch : Number.MAX_SAFE_INTEGER;

/**
 * Applies a delivered or re-read audit by id. A delivery that overtook a newer read never moves
 * an audit backwards, so snapshots and live events may arrive in any order.
 */
export function mergeAudit(audits: ReadonlyMap<string, AuditView>, audit: AuditView): Map<string, AuditView> {
  const held = audits.get(audit.id);
  const next = new Map(audits);
  if (!held || auditProgress(audit) >= auditProgress(held)) next.set(audit.id, audit);
  return next;
}

export function mergeRun(runs: ReadonlyMap<string, RunView>, run: RunView): Map<string, RunView> {
  const held = runs.get(run.id);
  const next = new Map(runs);
  if (!held || runProgress(run) >= runProgress(held)) next.set(run.id, run);
  return next;
}

export type RowKind = 'run' | 'model' | 'tool';

export interface Row {
  key: string;
  kind: RowKind;
  depth: number;
  label: string;
  status: string;
  running: boolean;
  /** Bar position on the shared axis, in percent, always finite and within 0..100. */
  left: number;
  width: number;
  /** Wall-clock milliseconds (to `now` while running); the backend's durationMs when it has one. */
  durationMs: number | null;
  /** A bare tool error whose run has not given its verdict yet. */
  awaitingVerdict: boolean;
  /** Why an audit or run was closed (abandoned, interrupted, cancelled, failed). */
  reason: string | null;
  /** The run a tool ran in, when that is not the run of the model that declared it (a resume). */
  ranInRun: string | null;
  run?: RunView;
  audit?: AuditView;
}

const time = (value: string | null | undefined) => (value ? Date.parse(value) : NaN);

function reasonOf(error: unknown): string | null {
  if (error == null) return null;
  if (typeof error === 'string') return error;
  if (typeof error === 'object') {
    const { code, type, reason, message } = error as Record<string, unknown>;
    const parts = [code ?? type, reason, message].filter((part) => typeof part === 'string');
    if (parts.length) return parts.join(': ');
  }
  return JSON.stringify(error);
}

const bySequence = (a: AuditView, b: AuditView) => {
  const diff = BigInt(a.sequence) - BigInt(b.sequence);
  if (diff !== 0n) return diff < 0n ? -1 : 1;
  if (a.__typename !== b.__typename) return a.__typename === 'ModelAudit' ? -1 : 1;
  return a.id < b.id ? -1 : 1;
};

/**
 * The whole timeline as one flat list of rows: each run (in creation order), its model calls in
 * sequence order, each followed by the tool executions it declared, wherever they ran (a resumed
 * run's tools sit under the model of the run that declared them). Tools whose declaring model is
 * not loaded (a truncated timeline) follow in their own run. A missing end means `now`.
 */
export function layoutTimeline(runs: readonly RunView[], audits: Iterable<AuditView>, now: number): Row[] {
  const runIndex = new Map(runs.map((run, index) => [run.id, index]));
  // The server's order: run creation, then sequence.
  const all = [...audits].sort((a, b) => (runIndex.get(a.runId) ?? -1) - (runIndex.get(b.runId) ?? -1) || bySequence(a, b));
  const models = new Set(all.filter((a) => a.__typename === 'ModelAudit').map((a) => a.id));
  const toolsByModel = new Map<string, AuditView[]>();
  for (const audit of all) {
    const modelId = audit.declaredBy?.id;
    if (audit.__typename === 'ToolAudit' && modelId && models.has(modelId)) {
      toolsByModel.set(modelId, [...(toolsByModel.get(modelId) ?? []), audit]);
    }
  }
  const rows: Omit<Row, 'left' | 'width'>[] = [];
  const spans: [number, number][] = [];
  const push = (row: Omit<Row, 'left' | 'width'>, start: number, end: number) => {
    rows.push(row);
    spans.push([start, end]);
  };
  const auditRow = (audit: AuditView, depth: number) => {
    const start = time(audit.startedAt);
    const running = audit.status === 'RUNNING' && !audit.awaitingRunTerminal;
    const end = Number.isNaN(time(audit.finishedAt)) ? now : time(audit.finishedAt);
    const isTool = audit.__typename === 'ToolAudit';
    push(
      {
        key: audit.id,
        kind: isTool ? 'tool' : 'model',
        depth,
        label: isTool ? `${audit.name} (${audit.toolCallId})` : `model ${audit.model ?? ''} (${audit.operationId})`,
        status: audit.status,
        running,
        durationMs: audit.durationMs ?? (Number.isNaN(start) ? null : Math.max(0, end - start)),
        awaitingVerdict: Boolean(audit.awaitingRunTerminal),
        reason: audit.status === 'RUNNING' && !audit.awaitingRunTerminal ? null : reasonOf(audit.error),
        ranInRun: null,
        audit,
      },
      start,
      end,
    );
  };
  for (const run of runs) {
    const start = time(run.startedAt ?? run.createdAt);
    const end = Number.isNaN(time(run.finishedAt)) ? now : time(run.finishedAt);
    push(
      {
        key: run.id,
        kind: 'run',
        depth: 0,
        label: `run ${run.id.slice(0, 8)}`,
        status: run.status,
        running: run.status === 'RUNNING' || run.status === 'QUEUED',
        durationMs: Number.isNaN(start) ? null : Math.max(0, end - start),
        awaitingVerdict: false,
        reason: reasonOf(run.error),
        ranInRun: null,
        run,
      },
      start,
      end,
    );
    for (const audit of all) {
      if (audit.runId !== run.id) continue;
      if (audit.__typename === 'ModelAudit') {
        auditRow(audit, 1);
        for (const tool of toolsByModel.get(audit.id) ?? []) {
          auditRow(tool, 2);
          if (tool.runId !== run.id) rows[rows.length - 1]!.ranInRun = tool.runId;
        }
      } else if (!(audit.declaredBy?.id && models.has(audit.declaredBy.id))) {
        auditRow(audit, 1);
      }
    }
  }
  const finite = spans.flat().filter(Number.isFinite);
  const t0 = finite.length ? Math.min(...finite) : now;
  const t1 = Math.max(finite.length ? Math.max(...finite) : now, t0 + 1);
  const pct = (value: number) => (Number.isFinite(value) ? Math.min(100, Math.max(0, ((value - t0) / (t1 - t0)) * 100)) : 0);
  return rows.map((row, index) => {
    const [start, end] = spans[index]!;
    const left = pct(start);
    return { ...row, left, width: Math.max(0.4, Math.min(100 - left, pct(end) - left)) };
  });
}

/** "1.2 s", "340 ms", "2 min 5 s". */
export function formatDuration(ms: number | null): string {
  if (ms == null || !Number.isFinite(ms)) return '';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}
