// A new user's path through README.md and docs/, on the embedded default, each step run as the
// page tells a user to run it and checked against what the page says it shows: the server from
// `npm run serve` (what `npm start` runs after its install step) on a fresh data directory, the
// tokens of its banner, the curl walkthrough (bash, curl, jq), the graphql-ws and SSE subscribers
// resuming after a dropped connection, and the debug UI's merge of a simulator's runs.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Timeline, type Entity } from '../../examples/debug-ui/timeline.js';
import { AuditClient } from '@agent-audit/client';
import { Relay } from '../browser/relay.js';
import { eventually, wsClient } from '../support/streams.js';

const REPO_ROOT = join(import.meta.dirname, '../..');

/**
 * The shell commands of README.md and docs/runtime-authors.md that name this test (the
 * code-blocks test checks that each is here as the page writes it). Run below by bash, as
 * written, with this server's address and tokens in place of the page's:
 */
const WALKTHROUGH = 'AUDIT_OWNER_TOKEN=<superadmin token> AUDIT_WORKER_TOKEN=<worker token> bash examples/curl/walkthrough.sh';
const SIMULATE = 'npm run simulate -- --url http://127.0.0.1:4000/graphql --step-ms 500 --owner-token <superadmin token>';
const MINT_TOKEN = 'npm run -s token -- --sub alice --role superadmin';
/*
 * Not run as written, and where each is covered instead:
 * - `npm start`: its install step is what `npm ci` did for this checkout; this test starts
 *   `npm run serve`, which is what `npm start` runs after it (README.md says so).
 * - `npm test`: the whole suite, this test included; `.ci/run` runs it.
 * - `TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres TEST_REDIS_URL=redis://127.0.0.1:6379 npm run test:only`:
 *   the suite again on PostgreSQL and Redis; `.ci/run` runs it as its services pass.
 * - `export DATABASE_URL=postgres://postgres@127.0.0.1:5432/audit AUTH_JWT_SECRET=$(openssl rand -base64 32)`,
 *   `export REDIS_URL=redis://127.0.0.1:6379` then `npm start`: on that pass the end-to-end
 *   suites (test/e2e/support/server.ts) start the server process with DATABASE_URL and
 *   AUTH_JWT_SECRET set, and the multi-instance suites with REDIS_URL.
 */

/** A page's command with its placeholders filled in, each value quoted for bash. */
function filled(command: string, values: Record<string, string>): string {
  let result = command;
  for (const [placeholder, value] of Object.entries(values)) result = result.replace(placeholder, `'${value.replaceAll("'", "'\\''")}'`);
  return result;
}
const dataDir = mkdtempSync(join(tmpdir(), 'audit-new-user-'));
const children = new Set<ChildProcess>();

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** A long-running command of the docs, its output collected; killed (its process group) after the tests. */
function start(command: string, args: string[], env: Record<string, string>) {
  const child = spawn(command, args, { cwd: REPO_ROOT, env: { ...process.env, ...env }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  const output = { stdout: '', stderr: '' };
  child.stdout!.on('data', (chunk: Buffer) => (output.stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output.stderr += chunk.toString()));
  return { child, output, lines: () => output.stdout.split('\n').filter(Boolean) };
}

/** The environment of a user's shell: no test secrets or database of this test run. */
const userEnv = { AUTH_JWT_SECRET: '', DATABASE_URL: '', REDIS_URL: '', DATA_DIR: dataDir, NODE_ENV: '' };

let url: string;
let owner: string;
let worker: string;
let banner: string;
let server: ReturnType<typeof start>;

beforeAll(async () => {
  const port = await freePort();
  server = start('npm', ['run', 'serve'], { ...userEnv, PORT: String(port) });
  // The banner is whole once the server answers (src/main.ts).
  await eventually(() => server.output.stdout, (out) => /worker token: +\S+/.test(out), { timeoutMs: 90_000, what: `the banner:\n${server.output.stderr}` });
  banner = server.output.stdout;
  url = /listening on (\S+)/.exec(banner)![1]!;
  owner = /superadmin token: (\S+)/.exec(banner)![1]!;
  worker = /worker token: +(\S+)/.exec(banner)![1]!;
}, 120_000);

afterAll(async () => {
  for (const child of children) {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  rmSync(dataDir, { recursive: true, force: true });
});

describe('a new user follows the README and docs/ (embedded default)', () => {
  it('npm start prints where it listens and two ready tokens, without "Bearer " and without warnings', () => {
    expect(banner).toMatch(/Agent audit server listening on http:\/\/127\.0\.0\.1:\d+\/graphql \(embedded PGlite in /);
    expect(banner).toMatch(/superadmin token: eyJ/);
    expect(banner).not.toMatch(/Bearer eyJ/);
    expect(banner).not.toMatch(/warn/i);
  });

  it('the curl walkthrough (docs/runtime-authors.md) runs with bash, curl and jq, and shows the timeline it promises', () => {
    // Tokens pasted as a user might, one with the prefix and one without.
    const command = filled(WALKTHROUGH, { '<superadmin token>': `Bearer ${owner}`, '<worker token>': worker });
    const run = spawnSync('bash', ['-c', command], {
      cwd: REPO_ROOT,
      env: { ...process.env, ...userEnv, AUDIT_URL: url },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stderr).toBe('');
    const timeline = JSON.parse(run.stdout.slice(run.stdout.indexOf('{\n')));
    // "The tool's durationMs is 350": its start and end readings are on one clock, 350 ms apart.
    expect(timeline.threadAudits.items).toEqual([
      { __typename: 'ModelAudit', operationId: 'model-1', sequence: '1', status: 'COMPLETED', durationMs: 800 },
      { __typename: 'ToolAudit', operationId: 'call-1', sequence: '3', status: 'COMPLETED', durationMs: 350 },
    ]);
  });

  it('the curl walkthrough stops at the first error, naming it', () => {
    const run = spawnSync('bash', ['examples/curl/walkthrough.sh'], {
      cwd: REPO_ROOT,
      env: { ...process.env, ...userEnv, AUDIT_URL: url, AUDIT_OWNER_TOKEN: owner, AUDIT_WORKER_TOKEN: `Bearer Bearer ${worker}` },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/^UNAUTHENTICATED: The Authorization header says "Bearer" twice/m);
    expect(run.stdout).not.toMatch(/lease/);
  });

  it('npm run -s token prints a token alone, which the server takes with the role asked for', async () => {
    const run = spawnSync('bash', ['-c', MINT_TOKEN], { cwd: REPO_ROOT, env: { ...process.env, ...userEnv }, encoding: 'utf8', timeout: 60_000 });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^eyJ[\w-]+\.[\w-]+\.[\w-]+\n$/);
    const token = run.stdout.trim();
    expect(JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString())).toMatchObject({ sub: 'alice', role: 'superadmin' });
    // Signed with the server's secret (kept in its data directory): alice may open a thread.
    const { id } = await new AuditClient({ url, token }).createThread({ title: "alice's" });
    expect(id).toBeTruthy();
  });

  it("the README's simulator command drives its scenarios into threads the owner token reads", async () => {
    const command = filled(SIMULATE, { '<superadmin token>': owner }).replace('http://127.0.0.1:4000/graphql', url);
    const simulate = start('bash', ['-c', command], userEnv);
    const code = await new Promise((resolve) => simulate.child.once('exit', resolve));
    expect(code, `${simulate.output.stdout}${simulate.output.stderr}`).toBe(0);
    expect(simulate.output.stdout).toMatch(/6 of 6 scenarios completed as expected/);
    // "== where to look ==": one line per scenario, `<name> ok thread <id> <its timeline's address>`.
    const lines = [...simulate.output.stdout.matchAll(/^ +\S+ +ok +thread (\S+) +(\S+)$/gm)];
    expect(lines).toHaveLength(6);
    for (const [, threadId, address] of lines) expect(address).toBe(String(new URL(`/#thread=${threadId}`, url)));
    const threads = lines.map((match) => match[1]!);
    const client = new AuditClient({ url, token: owner });
    for (const threadId of new Set(threads)) expect((await client.threadAudits(threadId)).items.length).toBeGreaterThan(0);

    // Its follow-up command, run as printed (without the pause), adds a run to that thread.
    const followUp = /^ +(npm run simulate -- .*)$/m.exec(simulate.output.stdout)![1]!;
    const runsBefore = (await client.threadAudits(threads[0]!)).items.length;
    const again = start('bash', ['-c', followUp.replace('--step-ms 1000', '--step-ms 0')], userEnv);
    expect(await new Promise((resolve) => again.child.once('exit', resolve)), `${again.output.stdout}${again.output.stderr}`).toBe(0);
    expect((await client.threadAudits(threads[0]!)).items.length).toBeGreaterThan(runsBefore);
  }, 180_000);

  it('the graphql-ws and SSE subscribers (docs/subscriptions.md) resume after a dropped connection and through a restart\'s start-up (HTTP 503), missing and repeating nothing', async () => {
    const client = new AuditClient({ url, token: owner });
    const { id: threadId } = await client.createThread({ title: 'watched' });
    const relay = new Relay(Number(new URL(url).port));
    const relayed = await relay.listen();
    const env = { AUDIT_OWNER_TOKEN: owner, AUDIT_THREAD_ID: threadId, AUDIT_URL: `${relayed}/graphql`, AUDIT_WS_URL: `${relayed.replace('http', 'ws')}/graphql` };
    const subscribers = [
      start(process.execPath, ['--import', 'tsx', 'examples/subscribers/graphql-ws.ts'], env),
      start(process.execPath, ['--import', 'tsx', 'examples/subscribers/sse.ts'], env),
    ];
    const runsSeen = (subscriber: (typeof subscribers)[number]) => subscriber.lines().map((line) => JSON.parse(line).run?.id);
    try {
      // Each says once it is connected, before any change (stdout keeps one JSON line per change).
      const connected = new RegExp(`^connected to \\S+: following thread ${threadId}, one JSON line per change$`, 'm');
      await eventually(() => subscribers.every((s) => connected.test(s.output.stderr)), Boolean, { timeoutMs: 30_000, what: 'both subscribers to say they are connected' });
      expect(subscribers.map((s) => s.lines())).toEqual([[], []]);
      // Both are live once each has printed a run created now (they start from "now").
      const created: string[] = [];
      await eventually(
        async () => {
          if (!subscribers.every((s) => s.lines().length > 0)) created.push((await client.createRun({ threadId })).id);
          return subscribers.every((s) => s.lines().length > 0);
        },
        (live) => live,
        { timeoutMs: 60_000, intervalMs: 500, what: 'both subscribers to print a change' },
      );
      const firstSeen = subscribers.map((s) => s.lines().length);

      relay.disconnect();
      const during = [];
      for (let i = 0; i < 3; i++) during.push((await client.createRun({ threadId })).id);
      await eventually(() => subscribers.every((s) => /disconnected/.test(s.output.stderr)), Boolean, { what: 'both to notice the cut' });
      relay.reconnect();
      const after = (await client.createRun({ threadId })).id;

      for (const [i, subscriber] of subscribers.entries()) {
        await eventually(() => runsSeen(subscriber), (seen) => seen.includes(after), { timeoutMs: 30_000, what: `subscriber ${i} to resume:\n${subscriber.output.stderr}` });
        const seen = runsSeen(subscriber);
        // Every run created while it was cut off, exactly once, in order, then the live one.
        expect(seen.slice(firstSeen[i])).toEqual([...during, after]);
        const cursors = subscriber.lines().map((line) => JSON.parse(line).cursor);
        expect(new Set(cursors).size).toBe(cursors.length);
        expect(subscriber.output.stderr).toMatch(/resubscribing after \S+/);
        // The reason it dropped, readable.
        expect(subscriber.output.stderr).not.toMatch(/\[object /);
      }

      // A deploy: the connections are cut, and the instance answers 503 UNAVAILABLE while it starts.
      const seenBeforeRestart = subscribers.map((s) => s.lines().length);
      const stderrBefore = subscribers.map((s) => s.output.stderr.length);
      relay.disconnect();
      relay.starting();
      const whileStarting = [];
      for (let i = 0; i < 2; i++) whileStarting.push((await client.createRun({ threadId })).id);
      const answered503 = () => subscribers.map((s, i) => s.output.stderr.slice(stderrBefore[i]).match(/503/g)?.length ?? 0);
      await eventually(answered503, (counts) => counts.every((count) => count >= 2), { timeoutMs: 30_000, what: 'both to be answered 503 twice' });
      relay.reconnect();
      const restarted = (await client.createRun({ threadId })).id;
      for (const [i, subscriber] of subscribers.entries()) {
        await eventually(() => runsSeen(subscriber), (seen) => seen.includes(restarted), { timeoutMs: 30_000, what: `subscriber ${i} to resume after the start-up:\n${subscriber.output.stderr}` });
        expect(runsSeen(subscriber).slice(seenBeforeRestart[i])).toEqual([...whileStarting, restarted]);
        expect(subscriber.child.exitCode).toBeNull();
      }
      expect(subscribers[1]!.output.stderr).toMatch(/disconnected \(HTTP 503 UNAVAILABLE: The server is starting; retry shortly\.\); resubscribing after \S+ in \d+ s/);
    } finally {
      for (const subscriber of subscribers) subscriber.child.kill('SIGTERM');
      relay.close();
    }
  }, 120_000);

  it("the debug UI's merge (docs/debug-ui.md) follows the simulator's runs (README) and equals a fresh read", async () => {
    const client = new AuditClient({ url, token: owner });
    const { id: threadId } = await client.createThread({ title: 'debug UI' });
    const documents = readFileSync(join(REPO_ROOT, 'examples/debug-ui/timeline.graphql'), 'utf8');
    const read = async (operationName: string) => {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${owner}` },
        body: JSON.stringify({ query: documents, operationName, variables: { threadId } }),
      });
      return (await response.json()).data;
    };
    const readRuns = async () => (await read('Runs')).thread.runs as Entity[];
    const timeline = new Timeline((await read('Timeline')).threadAudits, await readRuns(), async () => (await readRuns()).map((run) => run.id));
    const ws = wsClient(url, owner);
    const following = (async () => {
      for await (const result of ws.iterate({ query: documents, operationName: 'Live', variables: { threadId, after: timeline.cursor } })) {
        await timeline.apply((result.data as any).threadChanges);
      }
    })();

    // The README's simulator command, into this thread, signed with the banner's superadmin token.
    // Run asynchronously: this process keeps following the stream meanwhile.
    const simulate = start('npm', ['run', 'simulate', '--', '--url', url, '--thread', threadId, '--step-ms', '0', '--owner-token', owner], userEnv);
    const code = await new Promise((resolve) => simulate.child.once('exit', resolve));
    expect(code, `${simulate.output.stdout}${simulate.output.stderr}`).toBe(0);
    expect(simulate.output.stdout).toMatch(/6 of 6 scenarios completed as expected/);
    const { thread } = await (await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${owner}` },
      body: JSON.stringify({ query: 'query($t: ID!) { thread(id: $t) { changeCursor } }', variables: { t: threadId } }),
    })).json().then((body) => body.data);
    await eventually(() => timeline.cursor, (cursor) => cursor === thread.changeCursor, { timeoutMs: 30_000, what: 'the merge to catch up' });
    await ws.dispose();
    await following;

    const fresh = new Timeline((await read('Timeline')).threadAudits, await readRuns(), async () => []);
    expect(timeline.items()).toEqual(fresh.items());
    expect(timeline.runs()).toEqual(fresh.runs());
    expect(timeline.runs().length).toBeGreaterThanOrEqual(6);
  }, 180_000);
});
