// The statements of a read whose client has gone are cancelled (pg_cancel_backend by pid) and its
// connection goes back to the pool only once the cancel was sent: the cancel must never land on
// another request's statement (the connection reused by the next, a lifecycle write's
// transaction, the sweeps'). Readers who give up at random moments race other clients' reads and
// a worker's writes, which must all succeed, on a pool of 3, while a lock taken and let go over
// and over keeps statements running long enough to be cancelled mid-way (a connection given back
// before its cancel was sent fails the worker's or the other reader's requests UNAVAILABLE here).
// PostgreSQL only (PGlite has one in-process connection and no statement to cancel); with
// REQUIRE_SERVICES=1 never skipped.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { postgresSuiteRuns } from '../support/database.js';
import { untilEachOutcome } from '../support/races.js';
import { eventually } from '../support/streams.js';
import { e2eActors, jsonLines, startServer, storageForFile } from './support/server.js';

const meaningful = postgresSuiteRuns('cancel-race.e2e.test.ts');
const POOL_SIZE = 3;
const QUEUED = 4;
const GONE_AT_ONCE = 3;
const TOOL_CALLS = 4;
const storage = storageForFile({ runs: meaningful, postgresOnly: true });

interface Answer {
  data?: Record<string, any> | null;
  errors?: { message: string; extensions?: { code?: string } }[];
}

const READS = {
  run: 'query($runId: ID!) { run(id: $runId) { id status } }',
  threadAudits: 'query($threadId: ID!) { threadAudits(threadId: $threadId) { items { id status } } }',
  searchAudits: 'query($threadId: ID!) { searchAudits(threadId: $threadId, text: "found") { items { audit { id } } } }',
  toolActivity: 'query { toolActivity { runningCount tools { name completed } } }',
} as const;
const readNames = Object.keys(READS) as (keyof typeof READS)[];

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.runIf(meaningful)(`cancelling the reads of clients gone (PostgreSQL, DATABASE_POOL_SIZE=${POOL_SIZE})`, () => {
  it("never fails another client's read, a worker's write or a sweep", async () => {
    const server = await startServer(storage(), {
      DATABASE_POOL_SIZE: String(POOL_SIZE),
      // Only a cancel ends a statement waiting for the test's lock.
      DATABASE_STATEMENT_TIMEOUT_MS: '600000',
      // The sweeps run all along (the retention sweep deletes nothing: every thread is new).
      LEASE_SWEEP_INTERVAL_MS: '20',
      RETENTION_DAYS: '3650',
      RETENTION_SWEEP_INTERVAL_MS: '1000',
    });
    const admin = new pg.Client({ connectionString: storage().env.DATABASE_URL });
    const locker = new pg.Client({ connectionString: storage().env.DATABASE_URL });
    await Promise.all([admin.connect(), locker.connect()]);
    const testPids = [(await admin.query('SELECT pg_backend_pid() AS pid')).rows[0].pid, (await locker.query('SELECT pg_backend_pid() AS pid')).rows[0].pid];
    try {
      const who = await e2eActors();
      const send = async (token: string, query: string, variables: Record<string, unknown>, signal?: AbortSignal): Promise<Answer> => {
        const response = await fetch(server.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
          body: JSON.stringify({ query, variables }),
          signal,
        });
        return (await response.json()) as Answer;
      };
      /** A request whose client stays: it must answer without errors. */
      const served = async (token: string, query: string, variables: Record<string, unknown> = {}) => {
        const answer = await send(token, query, variables);
        expect(answer.errors, `${query}: ${JSON.stringify(answer.errors)}`).toBeUndefined();
        return answer.data!;
      };

      const { createThread: thread } = await served(who.owner, 'mutation { createThread(input: { title: "cancel race" }) { id } }');
      const threadId = thread.id as string;
      const newRun = async () => (await served(who.owner, 'mutation($threadId: ID!) { createRun(input: { threadId: $threadId }) { id } }', { threadId })).createRun.id as string;

      /** A worker's whole run: the claim, TOOL_CALLS model calls each declaring a tool call and that tool's start and end, the finish. */
      const workerRun = async (runId: string) => {
        const observedAt = () => new Date().toISOString();
        const { claimRun } = await served(who.worker, 'mutation($runId: ID!) { claimRun(input: { runId: $runId, leaseSeconds: 120 }) { runId epoch } }', { runId });
        const lease = { runId, epoch: claimRun.epoch };
        for (let call = 1; call <= TOOL_CALLS; call++) {
          const [operationId, toolCallId] = [`model-${call}`, `call-${call}`];
          await served(who.worker, 'mutation($input: ModelStartedInput!) { recordModelStarted(input: $input) { id } }', {
            input: { lease, operationId, sequence: String(2 * call - 1), model: 'm', input: { ask: 'find' }, observedAt: observedAt() },
          });
          await served(who.worker, 'mutation($input: ModelFinishedInput!) { recordModelFinished(input: $input) { id } }', {
            input: { lease, operationId, status: 'COMPLETED', output: { text: 'call' }, toolCalls: [{ id: toolCallId, name: 'lookup', args: {} }], observedAt: observedAt() },
          });
          await served(who.worker, 'mutation($input: ToolStartedInput!) { recordToolStarted(input: $input) { id } }', {
            input: { lease, toolCallId, name: 'lookup', effectiveInput: { q: 'x' }, sequence: String(2 * call), observedAt: observedAt() },
          });
          await served(who.worker, 'mutation($input: ToolFinishedInput!) { recordToolFinished(input: $input) { id } }', {
            input: { lease, toolCallId, output: { content: 'found it' }, observedAt: observedAt() },
          });
        }
        await served(who.worker, 'mutation($input: FinishRunInput!) { finishRun(input: $input) { status } }', { input: { lease, status: 'COMPLETED' } });
        return runId;
      };
      const readVariables = (runId: string) => ({ runId, threadId });
      // Another client (a principal of its own: searches are capped per principal) reads its own thread.
      const reader = await e2eActors();
      const readerThread = (await served(reader.owner, 'mutation { createThread(input: { title: "steady" }) { id } }')).createThread.id as string;
      const readerRun = (await served(reader.owner, 'mutation($threadId: ID!) { createRun(input: { threadId: $threadId }) { id } }', { threadId: readerThread })).createRun.id as string;
      await workerRun(readerRun);
      const variablesOf = (name: keyof typeof READS, runId: string) => (name === 'toolActivity' ? {} : readVariables(runId));

      /** Another client's reads, one after another until `until` settles: each must answer. */
      const steadyReads = async (until: Promise<unknown>) => {
        let done = false;
        void until.finally(() => (done = true));
        let count = 0;
        while (!done) {
          const name = readNames[count++ % readNames.length]!;
          await served(reader.owner, READS[name], name === 'toolActivity' ? {} : { runId: readerRun, threadId: readerThread });
        }
        return count;
      };

      /** Until `until` settles: the lock on runs held for 0 to 40 ms, then let go for 0 to 10 ms. */
      const flickerLock = async (until: Promise<unknown>) => {
        let done = false;
        void until.finally(() => (done = true));
        while (!done) {
          await locker.query('BEGIN');
          await locker.query('LOCK TABLE run IN ACCESS EXCLUSIVE MODE');
          await pause(Math.random() * 40);
          await locker.query('ROLLBACK');
          await pause(Math.random() * 10);
        }
      };

      const serverStatements = async () =>
        (
          await admin.query<{ pid: number; wait: string | null; query: string; state: string }>(
            `SELECT pid, wait_event_type AS wait, query, state FROM pg_stat_activity WHERE datname = current_database() AND pid <> ALL($1::int[]) AND backend_type = 'client backend'`,
            [testPids],
          )
        ).rows;
      const poolWaiting = async () => Number(/^agent_audit_db_pool_connections\{state="waiting"\} (\d+)/m.exec(await (await fetch(server.url.replace(/\/graphql$/, '/metrics'))).text())?.[1]);

      const finishedRuns: string[] = [];
      const outcomes = await untilEachOutcome(
        ['answered before its abort', 'cancelled mid-statement', 'aborted at a random moment', 'aborted before it was sent', 'given up waiting for a connection'],
        async (index) => {
          const runId = await newRun();
          if (index % 2 === 0) {
            // The pool full of reads waiting for a lock the test holds, one more waiting for a connection: then their clients go.
            // Threads, not runs: the lease sweep goes on; the retention sweep (two connections) waits too.
            await locker.query('BEGIN');
            await locker.query('LOCK TABLE thread IN ACCESS EXCLUSIVE MODE');
            const abort = new AbortController();
            const gone = Array.from({ length: POOL_SIZE + QUEUED }, () => send(who.owner, READS.run, readVariables(runId), abort.signal).then(() => 'answered', (error: Error) => error.name));
            // Such reads wait for the lock on connections of the pool (the retention sweep may hold two of them).
            const lockedReads = (rows: { pid: number; wait: string | null; query: string }[]) => rows.filter((row) => row.wait === 'Lock' && row.query.includes('thread_owner_id')).map((row) => row.pid);
            await eventually(serverStatements, (rows) => lockedReads(rows).length > 0, { what: 'reads waiting for the lock', timeoutMs: 60_000 });
            // The background jobs (lease sweep, retention sweep, clock read) queue at most 3: more waiting are reads given up.
            await eventually(poolWaiting, (waiting) => waiting >= QUEUED, { what: 'reads waiting for a connection', timeoutMs: 60_000 });
            const lockedPids = lockedReads(await serverStatements());
            // Behind them, another client's reads and the worker's writes wait for a connection, then for the lock.
            const work = workerRun(runId);
            const reads = steadyReads(work);
            await eventually(poolWaiting, (waiting) => waiting >= QUEUED + 2, { what: 'the worker and a reader waiting for a connection too', timeoutMs: 60_000 });
            abort.abort();
            expect(await Promise.all(gone)).toEqual(Array(POOL_SIZE + QUEUED).fill('AbortError'));
            // Only the cancels can end those statements while the lock is held.
            await eventually(serverStatements, (rows) => !rows.some((row) => lockedPids.includes(row.pid) && row.wait === 'Lock'), {
              what: 'the statements of the reads given up cancelled',
              timeoutMs: 60_000,
            });
            await locker.query('ROLLBACK');
            finishedRuns.push(await work);
            expect(await reads).toBeGreaterThan(0);
            return ['cancelled mid-statement', 'given up waiting for a connection'];
          }
          // Readers giving up at random moments, many at once, while another reads and the worker writes; a lock
          // taken and let go over and over makes statements last, so that many are cancelled mid-way.
          const work = workerRun(runId);
          let workDone = false;
          void work.finally(() => (workDone = true));
          const reads = steadyReads(work);
          const flickering = flickerLock(work);
          const giveUp = async (reader: number) => {
            const abort = new AbortController();
            // Spread from before sending to after the answer, on a loaded machine too.
            const delay = Math.floor(Math.random() * 25 * ((reader % 8) + 1)) - 5;
            if (delay < 0) abort.abort();
            const name = readNames[reader % readNames.length]!;
            const answer = send(who.owner, READS[name], variablesOf(name, runId), abort.signal);
            if (delay >= 0) await pause(delay).then(() => abort.abort());
            return answer.then(
              () => 'answered before its abort',
              (error: Error) => {
                expect(error.name).toBe('AbortError');
                return delay < 0 ? 'aborted before it was sent' : 'aborted at a random moment';
              },
            );
          };
          // Readers going, GONE_AT_ONCE at a time, while the worker's run lasts.
          const gone = Array.from({ length: GONE_AT_ONCE }, async (_, first) => {
            const outcomes: string[] = [];
            for (let reader = first; !workDone; reader += GONE_AT_ONCE) outcomes.push(await giveUp(reader));
            return outcomes;
          });
          const seen = (await Promise.all(gone)).flat();
          finishedRuns.push(await work);
          await flickering;
          expect(await reads).toBeGreaterThan(0);
          return seen;
        },
        30,
      );
      expect(outcomes).toEqual(['aborted at a random moment', 'aborted before it was sent', 'answered before its abort', 'cancelled mid-statement', 'given up waiting for a connection']);

      // Every write is there: each run completed with its model and tool audits.
      for (const runId of finishedRuns) {
        expect((await served(who.owner, READS.run, readVariables(runId))).run).toEqual({ id: runId, status: 'COMPLETED' });
      }
      const audits = (await served(who.owner, READS.threadAudits, { threadId })).threadAudits.items as { status: string }[];
      expect(audits.length).toBe(2 * TOOL_CALLS * finishedRuns.length);
      expect(audits.every((audit) => audit.status === 'COMPLETED')).toBe(true);
      // Nothing of the server's left running but its own idle connections, and the sweeps kept working.
      await eventually(serverStatements, (rows) => rows.every((row) => row.state !== 'active'), { what: 'no statement of the server left running', timeoutMs: 60_000 });
      expect(jsonLines(server).filter((line) => line.level !== 'info' && line.level !== 'debug').map((line) => line.msg)).toEqual([]);
      await server.stop();
    } finally {
      await locker.end();
      await admin.end();
    }
  }, 300_000);
});
