// docs/subscriptions.md, "Copying threads into a warehouse": examples/operations/sync-threads.ts,
// run as the page writes it against a server process, copies only what changed since its last
// run (nothing when nothing did), says which rows may still change, passes deletions on, and what
// its lines add up to equals a copy made from scratch.
import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, onTestFinished } from 'vitest';
import { createTestStorage } from '../support/storage.js';
import { killServers, runScript, serverForFile, startServer, tokenFor } from './support/server.js';

/** docs/subscriptions.md's command, as written (the code-blocks test checks it is here). */
const SYNC = 'AUDIT_OWNER_TOKEN=<superadmin token> npx tsx examples/operations/sync-threads.ts <state file>';

const server = serverForFile();
const dir = mkdtempSync(join(tmpdir(), 'sync-threads-'));
afterAll(async () => {
  await killServers();
  rmSync(dir, { recursive: true, force: true });
});

interface Line { op: 'upsert' | 'delete'; kind: string; id: string; threadId?: string; final?: boolean; row?: Record<string, any> }

async function sync(token: string, stateFile: string, url = server.url): Promise<Line[]> {
  const command = SYNC.replace('<superadmin token>', token).replace('<state file>', stateFile);
  const child = spawn('bash', ['-c', command], { cwd: join(import.meta.dirname, '../..'), env: { ...process.env, AUDIT_URL: url }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise((resolve) => child.once('exit', resolve));
  expect(code, stderr).toBe(0);
  return stdout.split('\n').filter(Boolean).map((line) => JSON.parse(line) as Line);
}

/** The warehouse: the lines applied in order, by id; a thread's deletion takes its rows. */
function applied(lines: Line[], into = new Map<string, Line>()) {
  for (const line of lines) {
    if (line.op === 'delete') for (const [id, row] of into) if (row.threadId === line.id) into.delete(id);
    if (line.op === 'upsert') into.set(line.id, line);
  }
  return into;
}

async function gqlAt(token: string, query: string, variables: Record<string, unknown> = {}, url = server.url) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await response.json()) as { data?: any; errors?: unknown[] };
  expect(body.errors, JSON.stringify(body.errors)).toBeUndefined();
  return body.data;
}

let sequence = 0;
const at = () => ({ observedAt: new Date().toISOString(), sequence: String(++sequence) });

const gql = (token: string, query: string, variables: Record<string, unknown> = {}) => gqlAt(token, query, variables);

/** A thread of `owner` with a message and a run whose model declares `call` and whose tool runs it; `end` finishes the tool and the run. */
async function threadWithRun(owner: string, worker: string, title: string, end: boolean, url = server.url) {
  const gql = (token: string, query: string, variables: Record<string, unknown> = {}) => gqlAt(token, query, variables, url);
  const threadId = (await gql(owner, 'mutation($title: String) { createThread(input: { title: $title }) { id } }', { title })).createThread.id as string;
  await gql(owner, 'mutation($threadId: ID!) { appendMessage(input: { threadId: $threadId, role: USER, content: "look it up" }) { id } }', { threadId });
  const runId = (await gql(owner, 'mutation($threadId: ID!) { createRun(input: { threadId: $threadId }) { id } }', { threadId })).createRun.id as string;
  const lease = { runId, epoch: (await gql(worker, 'mutation($runId: ID!) { claimRun(input: { runId: $runId, leaseSeconds: 600 }) { epoch } }', { runId })).claimRun.epoch };
  await gql(worker, 'mutation($input: ModelStartedInput!) { recordModelStarted(input: $input) { id } }', { input: { lease, operationId: 'm1', ...at() } });
  const toolCalls = [{ id: `${title}-c1`, name: 'lookup', args: { q: title } }];
  await gql(worker, 'mutation($input: ModelFinishedInput!) { recordModelFinished(input: $input) { id } }', { input: { lease, operationId: 'm1', status: 'COMPLETED', toolCalls, ...at() } });
  await gql(worker, 'mutation($input: ToolStartedInput!) { recordToolStarted(input: $input) { id } }', { input: { lease, toolCallId: `${title}-c1`, name: 'lookup', effectiveInput: { q: title }, ...at() } });
  const finish = async () => {
    await gql(worker, 'mutation($input: ToolFinishedInput!) { recordToolFinished(input: $input) { id } }', { input: { lease, toolCallId: `${title}-c1`, output: { content: 'found' }, ...at() } });
    await gql(worker, 'mutation($input: FinishRunInput!) { finishRun(input: $input) { id } }', { input: { lease, status: 'COMPLETED' } });
  };
  if (end) await finish();
  return { threadId, runId, finish };
}

describe('copying threads into a warehouse (examples/operations/sync-threads.ts)', () => {
  it('copies what changed since its last run, marks what may still change, passes deletions on, and adds up to a fresh copy', async () => {
    const [owner, other, worker] = await Promise.all([tokenFor('etl-owner', 'superadmin'), tokenFor('etl-other', 'superadmin'), tokenFor('etl-worker', 'worker')]);
    const done = await threadWithRun(owner, worker, 'done', true);
    const doomed = await threadWithRun(owner, worker, 'doomed', true);
    const live = await threadWithRun(owner, worker, 'live', false);
    const foreign = await threadWithRun(other, worker, 'foreign', true);
    const stateFile = join(dir, 'state.json');

    const first = await sync(owner, stateFile);
    const threadsOf = (lines: Line[]) => new Set(lines.map((line) => line.threadId ?? line.id));
    expect(threadsOf(first)).toEqual(new Set([done.threadId, doomed.threadId, live.threadId]));
    expect(threadsOf(first).has(foreign.threadId)).toBe(false);
    // Per thread: the thread, its message, its run, the model call, the tool execution and the tool call.
    expect([...applied(first).values()].filter((line) => line.threadId === done.threadId).map((line) => line.kind).sort()).toEqual(['audit', 'audit', 'message', 'run', 'thread', 'toolCall']);
    // What is still running says so; the rest is final.
    expect([...applied(first).values()].filter((line) => line.final === false).map((line) => [line.kind, line.row!.status]).sort()).toEqual([['audit', 'RUNNING'], ['run', 'RUNNING'], ['toolCall', 'RUNNING']]);

    // Nothing changed: nothing copied.
    expect(await sync(owner, stateFile)).toEqual([]);

    await live.finish();
    await gql(owner, 'mutation($threadId: ID!) { appendMessage(input: { threadId: $threadId, role: ASSISTANT, content: "done" }) { id } }', { threadId: done.threadId });
    await gql(owner, 'mutation($id: ID!) { deleteThread(id: $id) { threadId } }', { id: doomed.threadId });
    const second = await sync(owner, stateFile);
    expect(second.map((line) => [line.op, line.kind, line.threadId ?? line.id, line.final ?? null, line.row?.status ?? null]).sort()).toEqual(
      [
        ['delete', 'thread', doomed.threadId, null, null],
        ['upsert', 'message', done.threadId, true, null],
        ['upsert', 'audit', live.threadId, true, 'COMPLETED'],
        ['upsert', 'toolCall', live.threadId, true, 'COMPLETED'],
        ['upsert', 'run', live.threadId, true, 'COMPLETED'],
      ].sort(),
    );

    const fresh = await sync(owner, join(dir, 'fresh.json'));
        expect(rows(applied([...first, ...second]))).toEqual(rows(applied(fresh)));
  }, 180_000); // four runs of the script, each starting tsx

  it('after a restore, copies again each thread the restore took back, dropping the rows written after the backup, and deletes the threads it does not have', async () => {
    const [owner, worker] = await Promise.all([tokenFor('etl-restore-owner', 'superadmin'), tokenFor('etl-restore-worker', 'worker')]);
    const storage = await createTestStorage('embedded');
    onTestFinished(() => storage.remove());
    const stateFile = join(dir, 'restore-state.json');
    let original = await startServer(storage);
    const kept = await threadWithRun(owner, worker, 'kept', true, original.url);
    const beforeBackup = await sync(owner, stateFile, original.url);
    await original.stop();
    const backupDir = join(dir, 'backup');
    const backup = await runScript('scripts/backup-data-dir.ts', [backupDir], { DATA_DIR: storage.env.DATA_DIR! });
    expect(backup.code, backup.output).toBe(0);

    // After the backup, copied into the warehouse: a message in the kept thread and a new thread.
    original = await startServer(storage);
    await gqlAt(owner, 'mutation($threadId: ID!) { appendMessage(input: { threadId: $threadId, role: ASSISTANT, content: "lost" }) { id } }', { threadId: kept.threadId }, original.url);
    const lost = await threadWithRun(owner, worker, 'lost', true, original.url);
    const afterBackup = await sync(owner, stateFile, original.url);
    expect(afterBackup.some((line) => line.threadId === lost.threadId)).toBe(true);
    await original.stop();

    const restoredDir = join(dir, 'restored');
    cpSync(backupDir, restoredDir, { recursive: true });
    onTestFinished(() => rmSync(restoredDir, { recursive: true, force: true }));
    const restored = await startServer({ env: { DATABASE_URL: '', DATA_DIR: restoredDir }, describe: 'restored', remove: async () => {} });
    const afterRestore = await sync(owner, stateFile, restored.url);
    const fresh = await sync(owner, join(dir, 'restore-fresh.json'), restored.url);
    expect(rows(applied([...beforeBackup, ...afterBackup, ...afterRestore]))).toEqual(rows(applied(fresh)));
    await restored.stop();
  }, 240_000);
});

const rows = (warehouse: Map<string, Line>) => new Map([...warehouse].map(([id, line]) => [id, line.row]));
