import type { Principal } from './principal.js';
import type { Sql } from '../db/sql.js';
import type { Thread } from '../generated/prisma/client.js';
import { forbidden, notFound, unauthenticated } from './errors.js';
import { rowId } from './ids.js';

interface OwnedThread {
  id: string;
  ownerId: string;
}

export function requirePrincipal(principal: Principal | null | undefined): Principal {
  if (!principal) throw unauthenticated();
  return principal;
}

const isStaff = (principal: Principal) => principal.role === 'admin' || principal.role === 'superadmin';

/** Threads, their history, runs and the ToolCall projection: the owner, admin or superadmin. */
export function canReadThread(principal: Principal, thread: OwnedThread): boolean {
  return thread.ownerId === principal.sub || canReadEveryThread(principal);
}

export const canReadEveryThread = isStaff;

export function assertCanReadThread(principal: Principal, thread: OwnedThread): void {
  if (!canReadThread(principal, thread)) throw forbidden('Only the thread owner or an admin may do this');
}

/** Audit data: superadmins on threads they own, nobody else. */
export function canReadAudits(principal: Principal, thread: OwnedThread): boolean {
  return principal.role === 'superadmin' && thread.ownerId === principal.sub;
}

/**
 * SQL: the row's thread (`threadColumn`) is not one of the owner's (`owner`, a parameter) being
 * deleted, the test of a read across the owner's threads. A filter on each row read (NOT IN is
 * never planned as a join, so an index's order still serves the read), over a handful of threads
 * on their own index (migration 20261205000000_audit_filters_by_owner), never every thread.
 */
export const inLiveThreadOf = (threadColumn: string, owner: string) =>
  `${threadColumn} NOT IN (SELECT id FROM thread WHERE owner_id = ${owner} AND deleted_at IS NOT NULL)`;

/**
 * The thread, unless its deletion began. `forWrite`: for a write of a message into it, in the
 * write's transaction: the row is locked (FOR NO KEY UPDATE) until the write commits, so a
 * deletion's mark either waits for the write, whose row its batches then remove and count, or
 * commits first, and the thread is then not found; and the thread's appends go one at a time, so
 * its history's order is the order they commit in (threads.ts, appendMessage).
 */
export async function findThread(sql: Sql, threadId: string, forWrite = false): Promise<Thread | null> {
  const [thread] = await sql.query<Thread>(`SELECT * FROM thread WHERE id = $1::uuid AND deleted_at IS NULL${forWrite ? ' FOR NO KEY UPDATE' : ''}`, [
    rowId(threadId, 'Thread'),
  ]);
  return thread ?? null;
}

export async function loadReadableThread(sql: Sql, principal: Principal, threadId: string, forWrite = false): Promise<Thread> {
  const thread = await findThread(sql, threadId, forWrite);
  if (!thread) throw notFound('Thread', threadId);
  assertCanReadThread(principal, thread);
  return thread;
}

/**
 * For audit reads. Another role is FORBIDDEN before the thread is looked up; a superadmin on
 * someone else's thread gets NOT_FOUND, so the thread's existence is not revealed.
 */
export async function loadAuditThread(sql: Sql, principal: Principal, threadId: string) {
  requireAuditReader(principal);
  return auditThreadOrNotFound(principal, await findThread(sql, threadId), threadId);
}

export function requireAuditReader(principal: Principal): void {
  if (principal.role !== 'superadmin') throw forbidden('Audit data is for super administrators only');
}

/** A thread whose audits the principal may not read looks like no thread at all. */
export function auditThreadOrNotFound<T extends OwnedThread>(principal: Principal, thread: T | null | undefined, threadId: string): T {
  if (!thread || !canReadAudits(principal, thread)) throw notFound('Thread', threadId);
  return thread;
}

/** Whether a tool audit of `runId` executes the ToolCall row `toolCallRowId` (a worker's own call). */
export async function isExecutedInRun(sql: Sql, toolCallRowId: string, runId: string): Promise<boolean> {
  const rows = await sql.query('SELECT 1 FROM message WHERE tool_call_row_id = $1 AND run_id = $2 LIMIT 1', [toolCallRowId, runId]);
  return rows.length > 0;
}
