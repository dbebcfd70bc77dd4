import type { Principal } from './principal.js';
import type { Sql } from '../db/sql.js';
import { inTransaction } from '../db/transaction.js';
import type { Run, Thread } from '../generated/prisma/client.js';
import { assertCanReadThread } from './access.js';
import { publishWritten, type DomainDeps } from './command.js';
import { invalidTransition, notFound } from './errors.js';
import type { DomainEvent } from './events.js';
import { applyEvent, changesOf, leased, type ChangeJson, type LeaseProof, type SqlEvent } from './lifecycle-events.js';
import { lockRun, type LockedRun } from './lease.js';
import { checkJsonFields } from './observation.js';
import { errorFields, log } from '../log.js';

/**
 * How a run ends; a lease expiry is a FAILED run whose open work is ABANDONED, not failed. The
 * closing table (SEMANTICS.md, "Run terminal convergence") is audit_end_run's (migration
 * 20261203100000_lifecycle_functions).
 */
export type RunEnding = 'COMPLETED' | 'FAILED' | 'CANCELLED' | 'INTERRUPTED' | 'LEASE_EXPIRED';

export interface FinishRunInput {
  lease: LeaseProof;
  status: 'COMPLETED' | 'FAILED' | 'CANCELLED' | 'INTERRUPTED';
  error?: unknown;
  stateMessages?: unknown[] | null;
}

/** The verdict as an event (audit_finish_run); its input checked. */
export function finishRunEvent(deps: DomainDeps, input: FinishRunInput): SqlEvent {
  const stateMessages = input.stateMessages ?? [];
  checkJsonFields(deps.limits, { error: input.error, ...Object.fromEntries(stateMessages.map((m, i) => [`stateMessages[${i}]`, m])) });
  return { ...leased('finishRun', input.lease), status: input.status, error: input.error, stateMessages };
}

/** The worker's verdict on its run: the run ends and every audit still open in it closes, in one call. */
export async function finishRun(deps: DomainDeps, principal: Principal, input: FinishRunInput): Promise<Run> {
  return (await applyEvent(deps, principal, finishRunEvent(deps, input))).run!;
}

const END_RUN = 'SELECT audit_end_run($1::uuid, $2, $3::jsonb, \'[]\'::jsonb) AS ended';

/** Ends a run locked by the caller's transaction (audit_end_run): the changes it wrote, stamped. */
async function endRun(sql: Sql, run: LockedRun, ending: RunEnding, error: unknown): Promise<DomainEvent[]> {
  const [row] = await sql.query<{ ended: { changes: ChangeJson[] } }>(END_RUN, [run.id, ending, JSON.stringify(error)]);
  return changesOf(row!.ended.changes);
}

/** The owner or an admin ends a QUEUED or RUNNING run at once; the lease is revoked with it. */
export async function cancelRun(deps: DomainDeps, principal: Principal, runId: string): Promise<Run> {
  const changes = await inTransaction(deps.db, async (sql) => {
    const run = await lockRun(sql, runId);
    if (!run) throw notFound('Run', runId);
    const [thread] = await sql.query<Thread>('SELECT * FROM thread WHERE id = $1', [run.threadId]);
    assertCanReadThread(principal, thread!);
    if (run.status !== 'QUEUED' && run.status !== 'RUNNING') {
      throw invalidTransition(`Run ${run.id} has already ended (${run.status})`);
    }
    return endRun(sql, run, 'CANCELLED', { code: 'CANCELLED', cancelledBy: principal.sub });
  });
  publishWritten(deps, changes);
  return changes.at(-1)!.row as Run;
}

/** Ends one run whose lease expired, unless another sweeper or writer got there first. */
async function expireLease(deps: DomainDeps, runId: string): Promise<boolean> {
  const changes = await inTransaction(deps.db, async (sql) => {
    const run = await lockRun(sql, runId);
    if (!run || run.status !== 'RUNNING' || !run.expired) return [];
    return endRun(sql, run, 'LEASE_EXPIRED', { code: 'LEASE_EXPIRED', message: `The lease of ${run.leaseOwner} expired` });
  });
  publishWritten(deps, changes);
  return changes.length > 0;
}

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
