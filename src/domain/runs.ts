import type { Principal } from './principal.js';
import { prepared, type Sql } from '../db/sql.js';
import type { Run, RunStatus } from '../generated/prisma/client.js';
import { assertCanReadThread, canReadEveryThread, loadReadableThread } from './access.js';
import { fenced, type DomainDeps } from './command.js';
import { badInput, invalidTransition, notFound } from './errors.js';
import { runChanged } from './events.js';
import { isUuid, newId, rowId } from './ids.js';

export const ENDED_RUN_STATUSES: readonly RunStatus[] = ['INTERRUPTED', 'COMPLETED', 'FAILED', 'CANCELLED'];
export const isRunEnded = (status: RunStatus) => ENDED_RUN_STATUSES.includes(status);

/** A run the principal may read: the thread owner, admin or superadmin. */
export async function loadReadableRun(sql: Sql, principal: Principal, runId: string): Promise<Run> {
  const [run] = await sql.query<Run & { threadOwnerId: string }>(
    'SELECT r.*, t.owner_id AS thread_owner_id FROM run r JOIN thread t ON t.id = r.thread_id WHERE r.id = $1::uuid AND t.deleted_at IS NULL',
    [rowId(runId, 'Run')],
  );
  if (!run) throw notFound('Run', runId);
  const { threadOwnerId, ...readable } = run;
  assertCanReadThread(principal, { id: run.threadId, ownerId: threadOwnerId });
  return readable;
}

export const notARunOfThread = () => badInput('runId must be the id of a run of this thread');

/** A run id given to narrow a read of the thread (a stream of its changes) to one run: that run's id, else BAD_USER_INPUT. */
export async function runOfThread(sql: Sql, threadId: string, runId: string): Promise<string> {
  const [run] = isUuid(runId) ? await sql.query<{ id: string }>('SELECT id FROM run WHERE id = $1::uuid AND thread_id = $2::uuid', [runId, threadId]) : [];
  if (!run) throw notARunOfThread();
  return run.id;
}

/**
 * A new QUEUED run, in a thread the caller may write ($2: the caller, $3: may write every
 * thread); a resume ($5) only of an ended run of the same thread.
 */
export const CREATE_RUN = `WITH target AS (
  SELECT t.id AS thread_id FROM thread t
  WHERE t.id = $1::uuid AND (t.owner_id = $2 OR $3::boolean) AND t.deleted_at IS NULL
    AND ($5::uuid IS NULL OR EXISTS (
      SELECT 1 FROM run parent WHERE parent.id = $5::uuid AND parent.thread_id = t.id
        AND parent.status IN (${ENDED_RUN_STATUSES.map((status) => `'${status}'`).join(', ')})))),
bumped AS (
  UPDATE thread t SET change_cursor = t.change_cursor + 1 FROM target WHERE t.id = target.thread_id
  RETURNING t.change_cursor AS cursor, clock_timestamp() AS at),
created AS (
  INSERT INTO run (id, thread_id, resumed_from_id, change_cursor, changed_at)
  SELECT $4::uuid, target.thread_id, $5::uuid, bumped.cursor, bumped.at FROM target, bumped
  RETURNING *)
SELECT * FROM created`;

/** Failures that mean "a concurrent write got there first": the statement wrote nothing, the explanation decides. */
const WROTE_NOTHING_SQLSTATES = new Set(['23505', '40001', '40P01']);

async function createdRows(sql: Sql, params: unknown[]): Promise<Run[]> {
  try {
    return await sql.query<Run>(prepared(CREATE_RUN), params);
  } catch (error) {
    if (WROTE_NOTHING_SQLSTATES.has((error as { code?: unknown } | null)?.code as string)) return [];
    throw error;
  }
}

interface CreateRunInput {
  threadId: string;
  resumeFromRunId?: string | null;
}

/** Creates a QUEUED run; a resume must name an ended run of the same thread. */
export const createRun = fenced({
  async write(deps: DomainDeps, principal: Principal, input: CreateRunInput) {
    const resume = input.resumeFromRunId ?? null;
    if (!isUuid(input.threadId) || (resume !== null && !isUuid(resume))) return undefined;
    const [run] = await createdRows(deps.db, [
      input.threadId.toLowerCase(),
      principal.sub,
      canReadEveryThread(principal),
      newId(),
      resume?.toLowerCase() ?? null,
    ]);
    return run && { value: run, changes: [runChanged(run)] };
  },
  async explain(sql, principal, input) {
    const thread = await loadReadableThread(sql, principal, input.threadId);
    // Present means meant: a blank id is malformed, never a run that resumes nothing.
    if (input.resumeFromRunId != null) {
      const [parent] = await sql.query<Run>('SELECT * FROM run WHERE id = $1', [rowId(input.resumeFromRunId, 'Run')]);
      if (!parent) throw notFound('Run', input.resumeFromRunId);
      if (parent.threadId !== thread.id) throw invalidTransition('A run can only resume a run of the same thread');
      if (!isRunEnded(parent.status)) throw invalidTransition(`Run ${parent.id} has not ended (${parent.status})`);
    }
    return { retry: true };
  },
});
