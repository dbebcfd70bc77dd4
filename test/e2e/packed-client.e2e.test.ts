// The client as a user gets it: `npm pack` of packages/client, the tarball installed alone into
// an empty scratch folder (offline, from the npm cache), and a small agent there importing only
// @agent-audit/client records a run against the server process.
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditClient } from '@agent-audit/client';
import { backendName } from '../support/database.js';
import { e2eActors, serverForFile } from './support/server.js';

/*
 * packages/client/README.md's install commands, and where each runs here:
 * - `npm pack --pack-destination /tmp ./packages/client`: below, into a scratch folder instead of
 *   /tmp (with --ignore-scripts: the install built dist/, and packing must not rebuild it under
 *   the other suites);
 * - `npm install /tmp/agent-audit-client-0.1.0.tgz`: below, the tarball installed alone into a
 *   project whose package.json has `"type": "module"`, as the README says it needs.
 */
const run = promisify(execFile);
const CLIENT_DIR = join(import.meta.dirname, '../../packages/client');

const server = serverForFile();
let scratch: string;

beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 'audit-packed-client-'));
});

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe(`the packed client in an empty project (${backendName})`, () => {
  it('installs alone from its tarball and records a run that threadAudits reads back', async () => {
    // The install built dist/ (the package's `prepare`); packing must not rebuild the work tree.
    expect(existsSync(join(CLIENT_DIR, 'dist/index.d.ts'))).toBe(true);
    const packed = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', scratch], { cwd: CLIENT_DIR });
    const [{ filename, files }] = JSON.parse(packed.stdout) as [{ filename: string; files: { path: string }[] }];
    const paths = files.map((file) => file.path);
    for (const entry of ['dist/index.js', 'dist/index.d.ts', 'dist/langgraph/index.js', 'dist/ai-sdk/index.js', 'README.md']) expect(paths).toContain(entry);

    const project = join(scratch, 'project');
    await run('mkdir', [project]);
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'scratch-agent', private: true, type: 'module' }));
    await run('npm', ['install', '--offline', '--no-audit', '--no-fund', join(scratch, filename)], { cwd: project });
    // Nothing but the client itself: its framework peers are optional and it has no dependencies.
    expect(readdirSync(join(project, 'node_modules')).filter((name) => !name.startsWith('.'))).toEqual(['@agent-audit']);
    const installed = JSON.parse(readFileSync(join(project, 'node_modules/@agent-audit/client/package.json'), 'utf8')) as { name: string };
    expect(installed.name).toBe('@agent-audit/client');

    const who = await e2eActors();
    const owner = new AuditClient({ url: server.url, token: who.owner });
    const { id: threadId } = await owner.createThread({ title: 'packed client' });
    const { id: runId } = await owner.createRun({ threadId });
    copyFileSync(join(import.meta.dirname, 'packed-client/agent.mjs'), join(project, 'agent.mjs'));
    const agent = await run(process.execPath, ['agent.mjs'], {
      cwd: project,
      env: { PATH: process.env.PATH, AUDIT_URL: server.url, AUDIT_WORKER_TOKEN: who.worker, AUDIT_RUN_ID: runId },
    });
    expect(JSON.parse(agent.stdout)).toEqual({ status: 'COMPLETED' });

    const { items } = await owner.threadAudits(threadId);
    expect(items.map((item) => (item.__typename === 'ModelAudit' ? ['model', item.model, item.status] : ['tool', item.name, item.status]))).toEqual([
      ['model', 'packed-model', 'COMPLETED'],
      ['tool', 'get_weather', 'COMPLETED'],
    ]);
    const tool = items[1]!;
    expect(tool.__typename === 'ToolAudit' && tool.toolCall).toMatchObject({ declaredInput: { city: 'Paris' }, effectiveInput: { city: 'Paris', units: 'metric' }, output: 'Sunny, 21 °C' });
  }, 120_000);
});
