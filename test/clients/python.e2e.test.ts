// The Python client (clients/python) against the server process on the current backend: its own
// unittest suite, its offline install with pip, and the example agent the docs point to, run as
// it is. Python 3 is required: a missing python3 fails these tests, it does not skip them.
import { mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditClient } from '@agent-audit/client';
import { backendName } from '../support/database.js';
import { run } from './run-command.js';
import { E2E_JWT_SECRET, e2eActors, serverForFile } from '../e2e/support/server.js';

const REPO_ROOT = join(import.meta.dirname, '../..');
const CLIENT_DIR = join(REPO_ROOT, 'clients/python');

/**
 * The commands of clients/python/README.md and docs/runtime-authors.md, as written (the
 * code-blocks test checks they are the pages'), run by bash with the placeholders filled in.
 */
const UNIT_TESTS = ['cd clients/python', 'python3 -m unittest -v'];
const INSTALL = ['python3 -m venv .venv && . .venv/bin/activate', 'pip install ./clients/python'];
const RUN_EXAMPLE = [
  'export AUDIT_URL=http://127.0.0.1:4000/graphql',
  "export AUDIT_OWNER_TOKEN='<superadmin token>'",
  "export AUDIT_WORKER_TOKEN='<worker token>'",
  'python3 examples/python/agent.py',
];

const server = serverForFile();
let scratch: string;

beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 'audit-python-'));
});

afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

const filesUnder = (dir: string) => readdirSync(dir, { recursive: true, encoding: 'utf8' }).sort();

describe(`the Python client against the server process (${backendName})`, () => {
  it('python3 -m unittest passes in clients/python', async () => {
    const { code, output } = await run('bash', ['-c', UNIT_TESTS.join(' && ')], {
      cwd: REPO_ROOT,
      env: { AUDIT_URL: server.url, AUDIT_JWT_SECRET: E2E_JWT_SECRET },
      // Only a hang's bound: the suite waits out several leases and retries, and took 259 s on a
      // machine loaded by parallel test runs (the bound was 280 s).
      timeoutMs: 600_000,
    });
    expect(code, output).toBe(0);
    // Every test module ran: the lifecycle, the session, the lease keeper, errors and retries.
    expect(Number(/^Ran (\d+) tests/m.exec(output)?.[1])).toBeGreaterThanOrEqual(21);
    for (const module of ['test_lifecycle', 'test_run_session', 'test_lease', 'test_errors_and_retries']) expect(output).toContain(`tests.${module}.`);
    expect(output).not.toMatch(/skipped/);
  }, 620_000);

  it('installs offline with pip, and the example agent records its run', async () => {
    const treeBefore = filesUnder(CLIENT_DIR);
    // In a scratch folder holding the repository's clients/ and examples/, so that .venv is made
    // there and agent_audit can only come from the installed package. Nothing may come from a
    // package index (PIP_NO_INDEX).
    for (const dir of ['clients', 'examples']) symlinkSync(join(REPO_ROOT, dir), join(scratch, dir));
    const who = await e2eActors();
    const script = [...INSTALL, ...RUN_EXAMPLE]
      .join('\n')
      .replace('http://127.0.0.1:4000/graphql', server.url)
      .replace('<superadmin token>', who.owner)
      .replace('<worker token>', who.worker);
    const { code, output } = await run('bash', ['-e', '-c', script], { cwd: scratch, env: { PIP_NO_INDEX: '1' }, timeoutMs: 120_000 });
    expect(output).toContain('Successfully installed agent-audit-0.1.0');
    expect(filesUnder(CLIENT_DIR), 'the build left files in the work tree').toEqual(treeBefore);
    expect(code, output).toBe(0);
    expect(output).toContain('answer: Paris: Sunny, 21 °C; Oslo: Snow, -3 °C');
    const threadId = /^thread: (\S+)$/m.exec(output)?.[1];
    expect(output).toMatch(/^run: \S+ COMPLETED$/m);

    const owner = new AuditClient({ url: server.url, token: who.owner });
    const { items } = await owner.threadAudits(threadId!);
    expect(items.map((item) => [item.__typename, item.operationId, item.sequence, item.status])).toEqual([
      ['ModelAudit', 'model-1', '1', 'COMPLETED'],
      ['ToolAudit', 'call-paris', '3', 'COMPLETED'],
      ['ToolAudit', 'call-oslo', '5', 'COMPLETED'],
      ['ModelAudit', 'model-2', '7', 'COMPLETED'],
    ]);
    expect(items.every((item) => item.durationMs !== null)).toBe(true);
  }, 180_000);

  it('the package type-checks strictly for Python 3.9 (pyright), with its tests and the example', async () => {
    const { code, output } = await run(process.execPath, [join(REPO_ROOT, 'node_modules/pyright/index.js'), '-p', CLIENT_DIR], {
      cwd: REPO_ROOT,
      timeoutMs: 120_000,
    });
    expect(code, output).toBe(0);
    expect(output).toContain('0 errors');
  }, 150_000);

  it('with no server given, the tests start one themselves', async () => {
    const { code, output } = await run('python3', ['-m', 'unittest', '-v', 'tests.test_errors_and_retries.ClaimTest'], {
      cwd: CLIENT_DIR,
      env: { AUDIT_URL: '', AUDIT_JWT_SECRET: '' },
      timeoutMs: 180_000,
    });
    expect(code, output).toBe(0);
    expect(output).toContain('Ran 2 tests');
  }, 200_000);
});
