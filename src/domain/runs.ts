import type { Principal } from './principal.js';
import { prepared, type Sql } from '../db/sql.js';
import type { Run, RunStatus } from '../generated/prisma/client.js';
import { assertCanReadThread, canReadEveryThread, loadReadableThread } from './access.js';
import { fenced, writtenRows, type DomainDeps } from './command.js';
import { badInput, conflict, invalidTransition, notFound } from './errors.js';
import { runChanged, type CommittedChange } from './events.js';
import { isUuid, newId, nonBlank, rowId } from './ids.js';

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
 * runChanged's filter: changes of a run's status only. A renewal published live says it is one
 * (leaseOnly); a run read back from the database in its latest state (a stream catching up while
 * Redis is down, or behind) does not, so a run whose status is the one the stream last passed, or
 * the one it had when the stream started, has not changed status. Read before the stream starts:
 * a status change committed meanwhile differs from the one read, and is passed.
 */
export async function runStatusChanges(sql: Sql, threadId: string): Promise<(change: CommittedChange) => boolean> {
  const runs = await sql.query<{ id: string; status: RunStatus }>('SELECT id, status FROM run WHERE thread_id = $1::uuid', [threadId]);
  const statuses = new Map(runs.map(({ id, status }) => [id, status]));
  return (change) => {
    if (change.kind !== 'run' || change.leaseOnly || statuses.get(change.row.id) === change.row.status) return false;
    statuses.set(change.row.id, change.row.status);
    return true;
  };
}

/**
 * A new QUEUED run, in a thread the caller may write ($2: the caller, $3: may write every
 * thread); a resume ($5) only of an ended run of the same thread; with a createId ($6), only if
 * no run of the thread has it yet (the unique index decides between concurrent sends). The bump
 * tests `deleted_at` again: it waits for a deletion's mark holding the thread row, then sees it.
 */
export const CREATE_RUN = `WITH target AS (
  SELECT t.id AS thread_id FROM thread t
  WHERE t.id = $1::uuid AND (t.owner_id = $2 OR $3::boolean) AND t.deleted_at IS NULL
    AND ($5::uuid IS NULL OR EXISTS (
      SELECT 1 FROM run parent WHERE parent.id = $5::uuid AND parent.thread_id = t.id
        AND parent.status IN (${ENDED_RUN_STATUSES.map((status) => `'${status}'`).join(', ')})))
    AND ($6::text IS NULL OR NOT EXISTS (SELECT 1 FROM run keyed WHERE keyed.thread_id = t.id AND keyed.create_id = $6::text))),
bumped AS (
  UPDATE thread t SET change_cursor = t.change_cursor + 1 FROM target WHERE t.id = target.thread_id AND t.deleted_at IS NULL
  RETURNING t.change_cursor AS cursor, clock_timestamp() AS at),
created AS (
  INSERT INTO run (id, thread_id, resumed_from_id, create_id, change_cursor, changed_at)
  SELECT $4::uuid, target.thread_id, $5::uuid, $6::text, bumped.cursor, bumped.at FROM target, bumped
  RETURNING *)
SELECT * FROM created`;

interface CreateRunInput {
  threadId: string;
  resumeFromRunId?: string | null;
  /** The creator's idempotency key, unique per thread: sent again, it gets the run it created. */
  createId?: string | null;
}

/**
 * Creates a QUEUED run; a resume must name an ended run of the same thread. The same createId
 * again gets the run it created (a replay), if the resume is the same too, else CONFLICT.
 */
export const createRun = fenced({
  async write(deps: DomainDeps, principal: Principal, input: CreateRunInput) {
    const createId = input.createId == null ? null : nonBlank(input.createId, 'createId');
    const resume = input.resumeFromRunId ?? null;
    if (!isUuid(input.threadId) || (resume !== null && !isUuid(resume))) return undefined;
    const [run] = await writtenRows<Run>(deps.db, prepared(CREATE_RUN), [
      input.threadId.toLowerCase(),
      principal.sub,
      canReadEveryThread(principal),
      newId(),
      resume?.toLowerCase() ?? null,
      createId,
    ]);
    return run && { value: run, changes: [runChanged(run)] };
  },
  async explain(sql, principal, input) {
    const thread = await loadReadableThread(sql, principal, input.threadId);
    // Present means meant: a blank id is malformed, never a run that resumes nothing.
    const resume = input.resumeFromRunId == null ? null : rowId(input.resumeFromRunId, 'Run');
    if (input.createId != null) {
      const [created] = await sql.query<Run>('SELECT * FROM run WHERE thread_id = $1::uuid AND create_id = $2', [thread.id, input.createId]);
      if (created) {
        if (created.resumedFromId !== resume) {
          throw conflict(`createId ${input.createId} created run ${created.id} with resumeFromRunId ${created.resumedFromId ?? 'null'}, not ${resume ?? 'null'}`);
        }
        return { replay: created };
      }
    }
    if (resume !== null) {
      const [parent] = await sql.query<Run>('SELECT * FROM run WHERE id = $1', [resume]);
      if (!parent) throw notFound('Run', resume);
      if (parent.threadId !== thread.id) throw invalidTransition('A run can only resume a run of the same thread');
      if (!isRunEnded(parent.status)) throw invalidTransition(`Run ${parent.id} has not ended (${parent.status})`);
    }
    return { retry: true };
  },
});
