import type { Principal } from '../auth/principal.js';
import type { Sql } from '../db/sql.js';
import type { Run, RunStatus } from '../generated/prisma/client.js';
import { command, type DomainDeps, type Limits } from './command.js';
import { DomainError, invalidTransition, notFound } from './errors.js';
import { leaseRenewed, runChanged } from './events.js';
import { LEASED_RUN, bump, fastRows, fastStatement } from './fast-write.js';
import { isUuid, nonBlank, rowId } from './ids.js';

/** What a worker presents on every lifecycle write: the run and the epoch it claimed. */
export interface LeaseProof {
  runId: string;
  epoch: number;
}

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

const LOCKED_RUN_COLUMNS = `run.id, thread_id AS "threadId", status::text AS status, lease_owner AS "leaseOwner",
  lease_epoch AS "leaseEpoch", lease_expires_at AS "leaseExpiresAt", resumed_from_id AS "resumedFromId",
  claim_id AS "claimId", coalesce(lease_expires_at <= now(), false) AS expired, now() AS "databaseNow"`;

export const clampLeaseSeconds = (limits: Limits, seconds: number | null | undefined) =>
  Math.min(limits.leaseMaxSeconds, Math.max(limits.leaseMinSeconds, Math.floor(seconds ?? 30)));

/**
 * Locks the run row for the rest of the transaction: every writer of a run queues here. A run of
 * a thread being deleted is no run at all (deletion.ts): null, as for one already removed. The
 * thread row is read under a key-share lock (the one a foreign key check takes), so a write that
 * queued behind a deletion's mark sees the mark once it gets the run.
 */
export async function lockRun(sql: Sql, runId: string): Promise<LockedRun | null> {
  const [run] = await sql.query<LockedRun & { threadDeleted: boolean }>(
    `SELECT ${LOCKED_RUN_COLUMNS}, t.deleted_at IS NOT NULL AS "threadDeleted"
     FROM run JOIN thread t ON t.id = run.thread_id WHERE run.id = $1::uuid FOR UPDATE OF run FOR KEY SHARE OF t`,
    [rowId(runId, 'Run')],
  );
  if (!run || run.threadDeleted) return null;
  return run;
}

/**
 * The fence of every lifecycle write: the run must be RUNNING, leased by the caller, at the
 * presented epoch, and unexpired. Returns the run locked until the transaction ends.
 */
export async function requireLease(sql: Sql, principal: Principal, lease: LeaseProof): Promise<LockedRun> {
  const run = await lockRun(sql, lease.runId);
  if (!run) throw notFound('Run', lease.runId);
  if (run.status !== 'RUNNING') throw new DomainError('LEASE_LOST', `Run ${run.id} is ${run.status}, not RUNNING`);
  if (run.leaseOwner !== principal.sub) throw new DomainError('LEASE_LOST', `The lease of run ${run.id} is held by another worker`);
  if (run.leaseEpoch !== lease.epoch) {
    throw new DomainError('LEASE_LOST', `Lease epoch ${lease.epoch} is stale; the current epoch is ${run.leaseEpoch}`);
  }
  if (run.expired) throw new DomainError('LEASE_EXPIRED', `The lease of run ${run.id} has expired`);
  return run;
}

const toLease = (row: { id: string; leaseOwner: string | null; leaseEpoch: number; leaseExpiresAt: Date | null }): RunLease => ({
  runId: row.id,
  owner: row.leaseOwner!,
  epoch: row.leaseEpoch,
  expiresAt: row.leaseExpiresAt!,
});

export interface ClaimInput {
  runId: string;
  leaseSeconds?: number | null;
  /** The worker's idempotency key: a retry with it gets the lease this claim took. */
  claimId?: string | null;
}

/** The same worker retrying the claim that took the current, unexpired lease. */
const isRetryOfCurrentClaim = (run: LockedRun, principal: Principal, claimId: string | null | undefined) =>
  claimId != null && run.status === 'RUNNING' && run.claimId === claimId && run.leaseOwner === principal.sub && !run.expired;

/** QUEUED -> RUNNING of run `r`, as the worker $2 with lease seconds $3 and claim id $4. */
const CLAIM_SET = `status = 'RUNNING', lease_owner = $2, lease_epoch = r.lease_epoch + 1, claim_id = $4,
  lease_expires_at = now() + make_interval(secs => $3), started_at = coalesce(r.started_at, now())`;

/** The fast path of a first claim (fast-write.ts): the run locked only while QUEUED, claimed and stamped. */
export const CLAIM_QUEUED = `WITH queued AS (
  SELECT id, thread_id FROM run WHERE id = $1::uuid AND status = 'QUEUED' FOR UPDATE),
${bump('queued')},
claimed AS (
  UPDATE run r SET ${CLAIM_SET}, change_cursor = bumped.cursor, changed_at = bumped.at
  FROM queued, bumped WHERE r.id = queued.id
  RETURNING r.*)
SELECT * FROM claimed`;

const claimParams = (principal: Principal, runId: string, seconds: number, input: ClaimInput) => [
  runId,
  principal.sub,
  seconds,
  input.claimId ?? null,
];

function checkClaim(_deps: DomainDeps, _principal: Principal, input: ClaimInput): void {
  if (input.claimId != null) nonBlank(input.claimId, 'claimId');
}

async function claimRunFast(deps: DomainDeps, principal: Principal, input: ClaimInput) {
  if (!isUuid(input.runId)) return undefined;
  const seconds = clampLeaseSeconds(deps.limits, input.leaseSeconds);
  const [claimed] = await fastStatement<Run>(deps.statement, CLAIM_QUEUED, claimParams(principal, input.runId.toLowerCase(), seconds, input));
  return claimed && { value: toLease(claimed), changes: [runChanged(claimed)] };
}

/**
 * QUEUED -> RUNNING under the run's row lock: of racing claims exactly one finds it QUEUED.
 * A retry of the winning claim (same worker, same claimId, lease still current) gets the same
 * lease back, its expiry extended as by the claim; any other claim of a started run is refused.
 */
export const claimRun = command(async ({ sql, deps, emit }, principal: Principal, input: ClaimInput) => {
  const seconds = clampLeaseSeconds(deps.limits, input.leaseSeconds);
  const run = await lockRun(sql, input.runId);
  if (!run) throw notFound('Run', input.runId);

  if (isRetryOfCurrentClaim(run, principal, input.claimId)) {
    const [extended] = await sql.query<Run>(
      `UPDATE run SET lease_expires_at = now() + make_interval(secs => $2) WHERE id = $1::uuid RETURNING *`,
      [run.id, seconds],
    );
    emit(leaseRenewed(extended!));
    return toLease(extended!);
  }
  if (run.status !== 'QUEUED') throw invalidTransition(`Run ${input.runId} is ${run.status}; only a QUEUED run can be claimed`);

  const [claimed] = await sql.query<Run>(
    `UPDATE run r SET ${CLAIM_SET} WHERE id = $1::uuid RETURNING *`,
    claimParams(principal, run.id, seconds, input),
  );
  emit(runChanged(claimed!));
  return toLease(claimed!);
}, claimRunFast, checkClaim);

/** The fast path of a renewal (fast-write.ts): the leased run row extended and stamped. */
const RENEW_LEASE = `WITH ${LEASED_RUN}, ${bump('leased')},
renewed AS (
  UPDATE run r SET lease_expires_at = now() + make_interval(secs => $4), change_cursor = bumped.cursor, changed_at = bumped.at
  FROM leased, bumped WHERE r.id = leased.id
  RETURNING r.*)
SELECT * FROM renewed`;

async function renewLeaseFast(deps: DomainDeps, principal: Principal, lease: LeaseProof, leaseSeconds?: number | null) {
  const [renewed] = await fastRows<Run>(deps.statement, principal, lease, RENEW_LEASE, [clampLeaseSeconds(deps.limits, leaseSeconds)]);
  return renewed && { value: toLease(renewed), changes: [leaseRenewed(renewed)] };
}

/** Extends an unexpired lease; the epoch stays, so writes in flight remain valid. */
export const renewLease = command(
  async ({ sql, deps, emit }, principal: Principal, lease: LeaseProof, leaseSeconds?: number | null) => {
    await requireLease(sql, principal, lease);
    const [renewed] = await sql.query<Run>(
      `UPDATE run SET lease_expires_at = now() + make_interval(secs => $2) WHERE id = $1::uuid RETURNING *`,
      [rowId(lease.runId, 'Run'), clampLeaseSeconds(deps.limits, leaseSeconds)],
    );
    emit(leaseRenewed(renewed!));
    return toLease(renewed!);
  },
  renewLeaseFast,
);
