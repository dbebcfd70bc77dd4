// docs/operations.md's incident recipe, examples/curl/incident.sh, run by bash (curl and jq) as the
// page tells an on-call engineer to run it, against the server process: a thread's failures, a
// search across threads, what ran and failed in a time window, a live follow over SSE that resumes after its connection drops, the
// Activity totals, and a deletion that ends the follow and leaves the thread NOT_FOUND.
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditClient } from '@agent-audit/client';
import { Relay } from '../browser/relay.js';
import { backendName } from '../support/database.js';
import { eventually } from '../support/streams.js';
import { e2eActors, serverForFile } from './support/server.js';

/** The page's command (the code-blocks test checks it is docs/operations.md's, as written). */
const INCIDENT = 'AUDIT_OWNER_TOKEN=<superadmin token> bash examples/curl/incident.sh <command> [argument]';
const REPO_ROOT = join(import.meta.dirname, '../..');
const server = serverForFile();

let who: Awaited<ReturnType<typeof e2eActors>>;
let owner: AuditClient;
let threadId: string;
let failedRunId: string;
/** Before the first audit was written, and after the last: the window holding them. */
let writing: { since: string; until: string };
beforeAll(async () => {
  const since = new Date(Date.now() - 60_000).toISOString();
  who = await e2eActors();
  owner = new AuditClient({ url: server.url, token: who.owner });
  const worker = new AuditClient({ url: server.url, token: who.worker });
  threadId = (await owner.createThread({ title: 'billing agent' })).id;
  failedRunId = (await owner.createRun({ threadId })).id;
  const lease = await worker.claimRun(failedRunId, 60);
  await worker.recordModelStarted({ lease, operationId: 'model-1', sequence: 1, model: 'm', input: { step: 1 } });
  const call = { id: 'call-1', name: 'send_email', args: { to: 'ops@example.com' } };
  await worker.recordModelFinished({ lease, operationId: 'model-1', status: 'COMPLETED', output: { tool_calls: [call] }, toolCalls: [call], sequence: 2 });
  await worker.recordToolStarted({ lease, toolCallId: 'call-1', name: 'send_email', effectiveInput: call.args, sequence: 3 });
  await worker.recordToolError({ lease, toolCallId: 'call-1', error: { message: 'SMTP server timed out' }, sequence: 4 });
  await worker.finishRun({ lease, status: 'FAILED', error: { message: 'send_email failed' } });
  // A run that completed is no failure.
  await owner.createRun({ threadId });
  writing = { since, until: new Date(Date.now() + 60_000).toISOString() };
}, 60_000);

/** The page's command with its placeholders filled in, run by bash. */
function incident(args: string[]) {
  const command = INCIDENT.replace('<superadmin token>', `'${who.owner}'`).replace(' <command> [argument]', ` ${args.map((arg) => `'${arg}'`).join(' ')}`);
  return command;
}
function run(args: string[]) {
  return spawnSync('bash', ['-c', incident(args)], { cwd: REPO_ROOT, env: { ...process.env, AUDIT_URL: `${server.url}` }, encoding: 'utf8', timeout: 60_000 });
}
const lines = (text: string) => text.split('\n').filter(Boolean).map((line) => JSON.parse(line));

/** A long-running `follow`, its output collected. */
function follow(url: string) {
  const child = spawn('bash', ['-c', incident(['follow', threadId])], { cwd: REPO_ROOT, env: { ...process.env, AUDIT_URL: url }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const output = { stdout: '', stderr: '' };
  child.stdout.on('data', (chunk: Buffer) => (output.stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output.stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output, exited, kill: () => {
      try {
        process.kill(-child.pid!, 'SIGKILL'); // the group: bash, curl and the read loop
      } catch {
        // already gone
      }
    } };
}

describe(`examples/curl/incident.sh against the server process (${backendName})`, () => {
  const follows: ReturnType<typeof follow>[] = [];
  afterAll(() => follows.forEach((f) => f.kill()));

  it('failures: the failed run, with its failed tool call and error, and nothing else', () => {
    const answer = run(['failures', threadId]);
    expect(answer.status, answer.stderr).toBe(0);
    expect(lines(answer.stdout)).toEqual([
      expect.objectContaining({
        id: failedRunId,
        status: 'FAILED',
        error: { message: 'send_email failed' },
        toolCalls: [expect.objectContaining({ toolCallId: 'call-1', name: 'send_email', status: 'FAILED' })],
      }),
    ]);
  });

  it('search: the error text, found across threads with its thread and snippet', () => {
    const answer = run(['search', 'SMTP server timed out']);
    expect(answer.status, answer.stderr).toBe(0);
    expect(lines(answer.stdout)).toEqual([expect.objectContaining({ threadId, threadTitle: 'billing agent', snippet: expect.stringContaining('SMTP server timed out') })]);
  });

  it('window: what ran in a time window, then what failed in it, one JSON line each; an empty window prints nothing', () => {
    const ran = run(['window', writing.since, writing.until]);
    expect(ran.status, ran.stderr).toBe(0);
    expect(lines(ran.stdout)).toEqual([
      expect.objectContaining({ threadId, threadTitle: 'billing agent', audit: expect.objectContaining({ __typename: 'ToolAudit', name: 'send_email', status: 'FAILED' }) }),
      expect.objectContaining({ threadId, audit: expect.objectContaining({ __typename: 'ModelAudit', model: 'm', status: 'COMPLETED' }) }),
    ]);
    const failed = run(['window', writing.since, writing.until, 'FAILED']);
    expect(failed.status, failed.stderr).toBe(0);
    expect(lines(failed.stdout)).toEqual([
      expect.objectContaining({ threadId, audit: expect.objectContaining({ name: 'send_email', error: { message: 'SMTP server timed out' } }) }),
    ]);
    // An hour before anything was written: nothing, and no error.
    const before = new Date(Date.parse(writing.since) - 3_600_000).toISOString();
    const empty = run(['window', before, writing.since]);
    expect([empty.status, empty.stdout, empty.stderr]).toEqual([0, '', '']);
    // Bounds the wrong way round, or a time without its zone: the server's reason, and exit 1.
    const reversed = run(['window', writing.until, writing.since]);
    expect(reversed.status).toBe(1);
    expect(reversed.stderr).toMatch(/^BAD_USER_INPUT: until .* must be later than since/m);
    const zoneless = run(['window', '2026-12-06T14:02:00', writing.until]);
    expect(zoneless.status).toBe(1);
    expect(zoneless.stderr).toMatch(/^BAD_USER_INPUT: .*DateTime/m);
  });

  it('activity: the totals per tool', () => {
    const answer = run(['activity', '600']);
    expect(answer.status, answer.stderr).toBe(0);
    expect(JSON.parse(answer.stdout).tools).toEqual([expect.objectContaining({ name: 'send_email', failed: 1 })]);
  });

  it('follow: every change live, one JSON line each, resumed with Last-Event-ID after the connection drops, nothing missed or repeated', async () => {
    const relay = new Relay(Number(new URL(server.url).port));
    const relayed = `${await relay.listen()}/graphql`;
    const live = follow(relayed);
    follows.push(live);
    try {
      const runsSeen = () => lines(live.output.stdout).flatMap((change) => (change.run ? [change.run.id] : []));
      const created: string[] = [];
      await eventually(
        async () => {
          if (runsSeen().length === 0) created.push((await owner.createRun({ threadId })).id);
          return runsSeen().length > 0;
        },
        Boolean,
        { timeoutMs: 30_000, intervalMs: 500, what: `the follow to print a change:\n${live.output.stderr}` },
      );
      const before = runsSeen().length;
      relay.disconnect();
      const during = [];
      for (let i = 0; i < 3; i++) during.push((await owner.createRun({ threadId })).id);
      await eventually(() => live.output.stderr, (stderr) => /disconnected; resuming after \S+/.test(stderr), { what: 'the follow to notice the cut' });
      relay.reconnect();
      const after = (await owner.createRun({ threadId })).id;
      await eventually(runsSeen, (seen) => seen.includes(after), { timeoutMs: 30_000, what: `the follow to resume:\n${live.output.stderr}` });
      expect(runsSeen().slice(before)).toEqual([...during, after]);
      const cursors = lines(live.output.stdout).map((change) => change.cursor);
      expect(new Set(cursors).size).toBe(cursors.length);
    } finally {
      live.kill();
      relay.close();
    }
  }, 90_000);

  it('delete: the receipt, the thread NOT_FOUND after it, and a follow of it ended with THREAD_DELETED', async () => {
    const live = follow(server.url);
    follows.push(live);
    await eventually(() => owner.createRun({ threadId }).then(() => live.output.stdout), (stdout) => stdout.length > 0, { timeoutMs: 30_000, intervalMs: 500, what: 'the follow to be live' });
    const answer = run(['delete', threadId]);
    expect(answer.status, answer.stderr).toBe(0);
    const [receipt, gone] = answer.stdout.trim().split('\n');
    expect(JSON.parse(receipt!)).toEqual(expect.objectContaining({ threadId, runs: expect.any(Number), audits: 2, toolCalls: 1 }));
    expect(gone).toBe(`thread ${threadId}: NOT_FOUND (gone)`);
    expect(await live.exited).toBe(1);
    expect(live.output.stderr).toMatch(/^SUBSCRIPTION_INTERRUPTED \(THREAD_DELETED\): The thread was deleted\.$/m);
    expect(run(['failures', threadId]).stderr).toMatch(/^NOT_FOUND: /m);
  }, 60_000);
});
