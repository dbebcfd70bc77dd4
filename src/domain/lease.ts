import type { Principal } from './principal.js';
import type { Sql } from '../db/sql.js';
import type { Run, RunStatus } from '../generated/prisma/client.js';
import { fenced, type DomainDeps, type Limits, type Written } from './command.js';
import { DomainError, invalidTransition, notFound } from './errors.js';
import { leaseRenewed, runChanged } from './events.js';
import { LEASED_RUN, bump, fencedRows, leasedRows, type LeaseProof } from './fenced-statements.js';
import { isUuid, nonBlank, rowId } from './ids.js';

export interface RunLease {
  runId: string;
  owner: string;
  epoch: number;
  expiresAt: Date;
}

export interface LockedRun {
  id: string;
  threadId: string;
  status: RunStatus;
  leaseOwner: string | null;
  leaseEpoch: number;
  leaseExpiresAt: Date | null;
  resumedFromId: string | null;
  claimId: string | null;
  /** Judged by the database clock, so that every instance agrees. */
  expired: boolean;
  /** The database clock of this transaction (`now()`): the write path's one clock. */
  databaseNow: Date;
}

const RUN_COLUMNS = `run.id, thread_id AS "threadId", status::text AS status, lease_owner AS "leaseOwner",
  lease_epoch AS "leaseEpoch", lease_expires_at AS "leaseExpiresAt", resumed_from_id AS "resumedFromId",
  claim_id AS "claimId", coalesce(lease_expires_at <= now(), false) AS expired, now() AS "databaseNow"`;

export const clampLeaseSeconds = (limits: Limits, seconds: number | null | undefined) =>
  Math.min(limits.leaseMaxSeconds, Math.max(limits.leaseMinSeconds, Math.floor(seconds ?? 30)));

/**
 * The run as the lease rules see it, read with `locks` (none, or lockRun's). A run of a thread
 * being deleted is no run at all (deletion.ts): null, as for one already removed.
 */
async function runRow(sql: Sql, runId: string, locks: string): Promise<LockedRun | null> {
  const [run] = await sql.query<LockedRun & { threadDeleted: boolean }>(
    `SELECT ${RUN_COLUMNS}, t.deleted_at IS NOT NULL AS "threadDeleted"
     FROM run JOIN thread t ON t.id = run.thread_id WHERE run.id = $1::uuid ${locks}`,
    [rowId(runId, 'Run')],
  );
  if (!run || run.threadDeleted) return null;
  return run;
}

/** The run as the lease rules see it, unlocked. */
export const readRun = (sql: Sql, runId: string) => runRow(sql, runId, '');

/**
 * Locks the run, then its thread, for the rest of the transaction (the write path's lock order):
 * no change of the thread can commit until it ends, so a statement it runs next reads a snapshot
 * that stays fresh (fenced-statements.ts `bumpIfFresh`).
 */
export async function lockRunAndThread(sql: Sql, runId: string): Promise<void> {
  if (!isUuid(runId)) return;
  await sql.query('SELECT id FROM run WHERE id = $1::uuid FOR UPDATE', [runId]);
  await sql.query('SELECT t.id FROM thread t JOIN run r ON r.thread_id = t.id WHERE r.id = $1::uuid FOR UPDATE OF t', [runId]);
}

/**
 * The run, locked for the rest of the transaction (every writer of a run queues there). The thread
 * row is read under a key-share lock (the one a foreign key check takes), so a write that queued
 * behind a deletion's mark sees the mark once it gets the run.
 */
export const lockRun = (sql: Sql, runId: string) => runRow(sql, runId, 'FOR UPDATE OF run FOR KEY SHARE OF t');

/**
 * The fence of every lifecycle write, naming the refusal: the run must be RUNNING, leased by the
 * caller, at the presented epoch, and unexpired (LEASED_RUN is the same fence as a statement's lock).
 */
export function assertLease(run: LockedRun | null, principal: Principal, lease: LeaseProof): LockedRun {
  if (!run) throw notFound('Run', lease.runId);
  if (run.status !== 'RUNNING') throw new DomainError('LEASE_LOST', `Run ${run.id} is ${run.status}, not RUNNING`);
  if (run.leaseOwner !== principal.sub) throw new DomainError('LEASE_LOST', `The lease of run ${run.id} is held by another worker`);
  if (run.leaseEpoch !== lease.epoch) {
    throw new DomainError('LEASE_LOST', `Lease epoch ${lease.epoch} is stale; the current epoch is ${run.leaseEpoch}`);
  }
  if (run.expired) throw new DomainError('LEASE_EXPIRED', `The lease of run ${run.id} has expired`);
  return run;
}

/** The fence in a transaction: returns the run locked until the transaction ends. */
export async function requireLease(sql: Sql, principal: Principal, lease: LeaseProof): Promise<LockedRun> {
  return assertLease(await lockRun(sql, lease.runId), principal, lease);
}

/** The fence in an explanation (read only): the run as it is, or the refusal. */
export async function checkLease(sql: Sql, principal: Principal, lease: LeaseProof): Promise<LockedRun> {
  return assertLease(await readRun(sql, lease.runId), principal, lease);
}

const toLease = (row: { id: string; leaseOwner: string | null; leaseEpoch: number; leaseExpiresAt: Date | null }): RunLease => ({
  runId: row.id,
  owner: row.leaseOwner!,
  epoch: row.leaseEpoch,
  expiresAt: row.leaseExpiresAt!,
});

/**
 * A claim: QUEUED -> RUNNING under the run's row lock, so that of racing claims exactly one finds
 * it QUEUED; or the same worker retrying the claim that took the current, unexpired lease (same
 * claim id), which gets that lease back with its expiry extended as by the claim. As the worker
 * $2 with lease seconds $3 and claim id $4.
 */
export const CLAIM_RUN = `WITH target AS (
  SELECT id, thread_id, status = 'QUEUED' AS fresh_claim FROM run
  WHERE id = $1::uuid
    AND (status = 'QUEUED' OR (status = 'RUNNING' AND claim_id = $4 AND lease_owner = $2 AND lease_expires_at > now()))
  FOR UPDATE),
${bump('target')},
claimed AS (
  UPDATE run r SET status = 'RUNNING', lease_owner = $2, claim_id = $4,
    lease_epoch = CASE WHEN target.fresh_claim THEN r.lease_epoch + 1 ELSE r.lease_epoch END,
    lease_expires_at = now() + make_interval(secs => $3), started_at = coalesce(r.started_at, now()),
    change_cursor = bumped.cursor, changed_at = bumped.at
  FROM target, bumped WHERE r.id = target.id
  RETURNING r.*, target.fresh_claim)
SELECT * FROM claimed`;

export interface ClaimInput {
  runId: string;
  leaseSeconds?: number | null;
  /** The worker's idempotency key: a retry with it gets the lease this claim took. */
  claimId?: string | null;
}

/** Claims a QUEUED run; a retry of the claim that took the current lease gets it back. Any other claim of a started run is refused. */
export const claimRun = fenced({
  check(_deps: DomainDeps, _principal: Principal, input: ClaimInput) {
    if (input.claimId != null) nonBlank(input.claimId, 'claimId');
  },
  async write(deps: DomainDeps, _hint, principal: Principal, input: ClaimInput): Promise<Written<RunLease> | undefined> {
    if (!isUuid(input.runId)) return undefined;
    const seconds = clampLeaseSeconds(deps.limits, input.leaseSeconds);
    const [row] = await fencedRows<Run & { freshClaim: boolean }>(deps.db, CLAIM_RUN, [
      input.runId.toLowerCase(),
      principal.sub,
      seconds,
      input.claimId ?? null,
    ]);
    if (!row) return undefined;
    const { freshClaim, ...claimed } = row;
    return { value: toLease(claimed), changes: [freshClaim ? runChanged(claimed) : leaseRenewed(claimed)] };
  },
  async explain(sql, principal, input) {
    const run = await readRun(sql, input.runId);
    if (!run) throw notFound('Run', input.runId);
    const retryOfThisClaim =
      input.claimId != null && run.status === 'RUNNING' && run.claimId === input.claimId && run.leaseOwner === principal.sub && !run.expired;
    // The statement would claim now.
    if (run.status === 'QUEUED' || retryOfThisClaim) return { retry: undefined };
    throw invalidTransition(`Run ${input.runId} is ${run.status}; only a QUEUED run can be claimed`);
  },
});

/** An unexpired lease extended; the epoch stays, so writes in flight remain valid. */
const RENEW_LEASE = `WITH ${LEASED_RUN}, ${bump('leased')},
renewed AS (
  UPDATE run r SET lease_expires_at = now() + make_interval(secs => $4), change_cursor = bumped.cursor, changed_at = bumped.at
  FROM leased, bumped WHERE r.id = leased.id
  RETURNING r.*)
SELECT * FROM renewed`;

/** Extends an unexpired lease; the epoch stays, so writes in flight remain valid. */
export const renewLease = fenced({
  async write(deps: DomainDeps, _hint, principal: Principal, lease: LeaseProof, leaseSeconds?: number | null): Promise<Written<RunLease> | undefined> {
    const [renewed] = await leasedRows<Run>(deps.db, principal, lease, RENEW_LEASE, [clampLeaseSeconds(deps.limits, leaseSeconds)]);
    return renewed && { value: toLease(renewed), changes: [leaseRenewed(renewed)] };
  },
  async explain(sql, principal, lease, _leaseSeconds?: number | null) {
    await checkLease(sql, principal, lease);
    return { retry: undefined };
  },
});
