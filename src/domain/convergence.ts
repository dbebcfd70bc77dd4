import type { Principal } from './principal.js';
import { updateRow } from '../db/sql.js';
import type { AuditStatus, Message, Prisma, Run, RunStatus, Thread } from '../generated/prisma/client.js';
import { assertCanReadThread } from './access.js';
import { command, publishWritten, type CommandScope, type DomainDeps } from './command.js';
import { invalidTransition, notFound } from './errors.js';
import { auditChanged, runChanged } from './events.js';
import { LEASED_RUN, bumpIfFresh, jsonParam, leasedRows, type LeaseProof } from './fenced-statements.js';
import { isJsonObject } from './json.js';
import { lockRun, requireLease, type LockedRun } from './lease.js';
import { checkJsonFields } from './observation.js';
import { MIRROR_ONTO_TOOL_CALL } from './tool-call-projection.js';
import { errorFields, log } from '../log.js';

/** How a run ends; a lease expiry is a FAILED run whose open work is ABANDONED, not failed. */
export type RunEnding = 'COMPLETED' | 'FAILED' | 'CANCELLED' | 'INTERRUPTED' | 'LEASE_EXPIRED';

interface ClosingRule {
  runStatus: RunStatus;
  /** A tool audit holding a bare error, waiting for this verdict. */
  awaitingTool: AuditStatus;
  /** Any other RUNNING audit, model or tool. */
  open: AuditStatus;
  /** Only COMPLETED and FAILED runs complete bare errors from the final state. */
  reconcilesFromState: boolean;
}

/** SEMANTICS.md, "Run terminal convergence"; the ToolCall follows via the projection. */
const CLOSING_RULES: Record<RunEnding, ClosingRule> = {
  COMPLETED: { runStatus: 'COMPLETED', awaitingTool: 'ABANDONED', open: 'ABANDONED', reconcilesFromState: true },
  FAILED: { runStatus: 'FAILED', awaitingTool: 'FAILED', open: 'FAILED', reconcilesFromState: true },
  LEASE_EXPIRED: { runStatus: 'FAILED', awaitingTool: 'ABANDONED', open: 'ABANDONED', reconcilesFromState: false },
  CANCELLED: { runStatus: 'CANCELLED', awaitingTool: 'CANCELLED', open: 'CANCELLED', reconcilesFromState: false },
  INTERRUPTED: { runStatus: 'INTERRUPTED', awaitingTool: 'INTERRUPTED', open: 'INTERRUPTED', reconcilesFromState: false },
};

const CLOSING_CODE: Record<RunEnding, string> = {
  COMPLETED: 'RUN_COMPLETED',
  FAILED: 'RUN_FAILED',
  LEASE_EXPIRED: 'LEASE_EXPIRED',
  CANCELLED: 'RUN_CANCELLED',
  INTERRUPTED: 'RUN_INTERRUPTED',
};

/**
 * The last state message for `toolCallId`, whatever its status: it supersedes every earlier
 * message with a reused id. A call this run never persisted is never looked up at all.
 */
function lastStateMessage(stateMessages: unknown[], toolCallId: string): Prisma.JsonObject | null {
  for (let index = stateMessages.length - 1; index >= 0; index--) {
    const message = stateMessages[index];
    if (isJsonObject(message) && message.tool_call_id === toolCallId) return message;
  }
  return null;
}

function closingData(audit: Message, ending: RunEnding, endedAt: Date, stateMessages: unknown[]): Partial<Message> {
  const rule = CLOSING_RULES[ending];
  const reason = { code: CLOSING_CODE[ending], message: `Closed when the run ended (${ending})` };
  const data: Partial<Message> = {
    status: audit.awaitingRunTerminal ? rule.awaitingTool : rule.open,
    finishedAt: audit.finishedAt ?? endedAt,
    awaitingRunTerminal: false,
    // A bare error already recorded is the better explanation; keep it.
    error: audit.error ?? reason,
  };
  if (audit.awaitingRunTerminal && rule.reconcilesFromState) {
    // Only an error supplies the FAILED output; anything else leaves the table's closing.
    const last = lastStateMessage(stateMessages, audit.operationId!);
    if (last?.status === 'error') Object.assign(data, { status: 'FAILED', output: last });
  }
  return data;
}

/**
 * Ends a locked run and, in the same transaction, closes every audit still open in it and their
 * ToolCalls. The caller holds the run's row lock, so each run is converged exactly once.
 */
export async function endRun(
  { sql, emit }: CommandScope,
  run: LockedRun,
  ending: RunEnding,
  error: unknown,
  stateMessages: unknown[] = [],
) {
  // One instant for the run and everything it closes: they ended together, by the database
  // clock that also stamped the start (never this instance's own clock).
  const endedAt = run.databaseNow;
  const [ended] = await sql.query<Run>(`UPDATE run r SET ${endRunSet(2, 3, '$4::timestamptz')} WHERE id = $1::uuid RETURNING *`, [
    run.id,
    CLOSING_RULES[ending].runStatus,
    jsonParam(error),
    endedAt,
  ]);
  const open = await sql.query<Message>(
    `SELECT * FROM message WHERE run_id = $1 AND status = 'RUNNING' AND message_type IN ('model_audit', 'tool_audit')
     ORDER BY sequence`,
    [run.id],
  );
  for (const audit of open) emit(auditChanged(await updateRow<Message>(sql, 'message', audit.id, closingData(audit, ending, endedAt, stateMessages))));
  const tools = open.filter((audit) => audit.messageType === 'tool_audit');
  if (tools.length > 0) {
    const mirrored = await sql.query(`${MIRROR_ONTO_TOOL_CALL('(SELECT * FROM message WHERE id = ANY($1::uuid[]))')} RETURNING tc.id`, [
      tools.map((audit) => audit.id),
    ]);
    // Every tool audit has its ToolCall; a run with one that lost it is never ended half-mirrored.
    if (mirrored.length !== tools.length) throw new Error(`Run ${run.id}: ${tools.length - mirrored.length} closed tool audits have no ToolCall to mirror`);
  }
  emit(runChanged(ended!));
  return ended!;
}

/** The run row's end (run `r`), parameters $status and $error (null: keep the one it has); the lease goes with it. */
const endRunSet = (status: number, error: number, finishedAt = 'now()') =>
  `status = $${status}::"RunStatus", finished_at = ${finishedAt}, error = coalesce($${error}::jsonb, r.error), lease_owner = NULL, lease_expires_at = NULL`;

export interface FinishRunInput {
  lease: LeaseProof;
  status: 'COMPLETED' | 'FAILED' | 'CANCELLED' | 'INTERRUPTED';
  error?: unknown;
  stateMessages?: unknown[] | null;
}

/**
 * A verdict on a run with no audit open: the leased run ended and stamped, with nothing to
 * converge. The open audits are looked for in the statement's snapshot, older than its run lock,
 * so it writes only when no change of the thread committed since (`fresh`).
 */
export const FINISH_QUIET_RUN = `WITH ${LEASED_RUN},
quiet AS (
  SELECT leased.id, leased.thread_id FROM leased WHERE NOT EXISTS (
    SELECT 1 FROM message m WHERE m.run_id = leased.id AND m.status = 'RUNNING' AND m.message_type IN ('model_audit', 'tool_audit'))),
${bumpIfFresh('quiet')},
ended AS (
  UPDATE run r SET ${endRunSet(4, 5)}, change_cursor = bumped.cursor, changed_at = bumped.at
  FROM quiet, bumped WHERE r.id = quiet.id
  RETURNING r.*)
SELECT * FROM ended`;

function checkFinishRun(deps: DomainDeps, _principal: Principal, input: FinishRunInput): void {
  const stateMessages = input.stateMessages ?? [];
  checkJsonFields(deps.limits, { error: input.error, ...Object.fromEntries(stateMessages.map((m, i) => [`stateMessages[${i}]`, m])) });
}

/** The verdict's convergence: the run locked and ended, every audit still open in it closed, in one transaction. */
const convergeRun = command(async (scope, principal: Principal, input: FinishRunInput) => {
  const run = await requireLease(scope.sql, principal, input.lease);
  return endRun(scope, run, input.status, input.error, input.stateMessages ?? []);
});

/**
 * The worker's verdict on its run. Ending a run is one rule that needs several statements when
 * audits are open, so it is a transaction; a run with none open ends in one statement.
 */
export async function finishRun(deps: DomainDeps, principal: Principal, input: FinishRunInput): Promise<Run> {
  checkFinishRun(deps, principal, input);
  const [ended] = await leasedRows<Run>(deps.db, principal, input.lease, FINISH_QUIET_RUN, [
    CLOSING_RULES[input.status].runStatus,
    jsonParam(input.error),
  ]);
  if (!ended) return convergeRun(deps, principal, input);
  publishWritten(deps, [runChanged(ended)]);
  return ended;
}

/** The owner or an admin ends a QUEUED or RUNNING run at once; the lease is revoked with it. */
export const cancelRun = command(async (scope, principal: Principal, runId: string) => {
  const run = await lockRun(scope.sql, runId);
  if (!run) throw notFound('Run', runId);
  const [thread] = await scope.sql.query<Thread>('SELECT * FROM thread WHERE id = $1', [run.threadId]);
  assertCanReadThread(principal, thread!);
  if (run.status !== 'QUEUED' && run.status !== 'RUNNING') {
    throw invalidTransition(`Run ${run.id} has already ended (${run.status})`);
  }
  return endRun(scope, run, 'CANCELLED', { code: 'CANCELLED', cancelledBy: principal.sub });
});

/** Ends one run whose lease expired, unless another sweeper or writer got there first. */
const expireLease = command(async (scope, runId: string) => {
  const run = await lockRun(scope.sql, runId);
  if (!run || run.status !== 'RUNNING' || !run.expired) return false;
  await endRun(scope, run, 'LEASE_EXPIRED', { code: 'LEASE_EXPIRED', message: `The lease of ${run.leaseOwner} expired` });
  return true;
});

/**
 * Converges every run whose lease has expired. Safe with several instances sweeping at once:
 * each run is re-checked under its row lock, so exactly one sweeper ends it. The sweep walks the
 * due runs in expiry order, each batch after the last one's final run, so runs that keep failing
 * to converge are logged and left for the next sweep without holding back the runs behind them.
 */
export async function sweepExpiredLeases(deps: DomainDeps, batchSize = 100): Promise<number> {
  let ended = 0;
  let after: { leaseExpiresAt: Date; id: string } | null = null;
  for (;;) {
    const due: { id: string; leaseExpiresAt: Date }[] = await deps.db.query(
      `SELECT id, lease_expires_at FROM run
       WHERE status = 'RUNNING' AND lease_expires_at <= now()
         AND ($2::timestamptz IS NULL OR (lease_expires_at, id) > ($2::timestamptz, $3::uuid))
       ORDER BY lease_expires_at, id LIMIT $1`,
      [batchSize, after?.leaseExpiresAt ?? null, after?.id ?? null],
    );
    for (const { id } of due) {
      try {
        if (await expireLease(deps, id)) ended++;
      } catch (error) {
        log.error({ component: 'lease-sweeper', runId: id, error: errorFields(error) }, 'could not end a run; the next sweep retries it');
      }
    }
    if (due.length < batchSize) return ended;
    after = due.at(-1)!;
  }
}
