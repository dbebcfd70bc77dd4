import type { Principal } from './principal.js';
import type { Sql } from '../db/sql.js';
import type { RunStatus } from '../generated/prisma/client.js';
import type { DomainDeps, Limits } from './command.js';
import { nonBlank, rowId } from './ids.js';
import { applyEvent, leased, type LeaseProof, type SqlEvent } from './lifecycle-events.js';

export interface RunLease {
  runId: string;
  owner: string;
  epoch: number;
  expiresAt: Date;
  /** The database clock when the lease was taken or extended (the run's change): expiresAt − grantedAt is its length on one clock. */
  grantedAt: Date;
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
 * The run, locked for the rest of the transaction (every writer of a run queues there). The thread
 * row is read under a key-share lock (the one a foreign key check takes), so a write that queued
 * behind a deletion's mark sees the mark once it gets the run. A run of a thread being deleted is
 * no run at all (deletion.ts): null, as for one already removed.
 */
export async function lockRun(sql: Sql, runId: string): Promise<LockedRun | null> {
  const [run] = await sql.query<LockedRun & { threadDeleted: boolean }>(
    `SELECT ${RUN_COLUMNS}, t.deleted_at IS NOT NULL AS "threadDeleted"
     FROM run JOIN thread t ON t.id = run.thread_id WHERE run.id = $1::uuid FOR UPDATE OF run FOR KEY SHARE OF t`,
    [rowId(runId, 'Run')],
  );
  if (!run || run.threadDeleted) return null;
  return run;
}


export const toLease = (row: { id: string; leaseOwner: string | null; leaseEpoch: number; leaseExpiresAt: Date | null; changedAt: Date | null }): RunLease => ({
  runId: row.id,
  owner: row.leaseOwner!,
  epoch: row.leaseEpoch,
  expiresAt: row.leaseExpiresAt!,
  grantedAt: row.changedAt!,
});

export interface ClaimInput {
  runId: string;
  leaseSeconds?: number | null;
  /** The worker's idempotency key: a retry with it gets the lease this claim took. */
  claimId?: string | null;
}

/** The claim as an event: the claimId checked and the lease clamped as the claimRun mutation does. */
export function claimEvent(limits: Limits, input: ClaimInput): SqlEvent {
  if (input.claimId != null) nonBlank(input.claimId, 'claimId');
  rowId(input.runId, 'Run');
  return { kind: 'claimRun', runId: input.runId, leaseSeconds: clampLeaseSeconds(limits, input.leaseSeconds), claimId: input.claimId ?? null };
}

/** Claims a QUEUED run; a retry of the claim that took the current lease gets it back (audit_claim_run). */
export async function claimRun(deps: DomainDeps, principal: Principal, input: ClaimInput): Promise<RunLease> {
  const { run } = await applyEvent(deps, principal, claimEvent(deps.limits, input));
  return toLease(run!);
}

/** The renewal as an event: the lease clamped to the configured bounds. */
export const renewalEvent = (limits: Limits, lease: LeaseProof, leaseSeconds?: number | null): SqlEvent => ({
  ...leased('renewLease', lease),
  leaseSeconds: clampLeaseSeconds(limits, leaseSeconds),
});

/** Extends an unexpired lease; the epoch stays, so writes in flight remain valid (audit_renew_lease). */
export async function renewLease(deps: DomainDeps, principal: Principal, lease: LeaseProof, leaseSeconds?: number | null): Promise<RunLease> {
  const { run } = await applyEvent(deps, principal, renewalEvent(deps.limits, lease, leaseSeconds));
  return toLease(run!);
}
