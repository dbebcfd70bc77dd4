// docs/dashboards.md's subscriber, run as the page tells a user to run it, against a server on a
// real port: it prints the view at once, then a new one after a tool starts.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { must, runningRun } from '../support/lifecycle.js';
import { eventually } from '../support/streams.js';

let t: TestApp;
let url: string;
beforeAll(async () => {
  t = await startTestApp();
  url = await t.app.start(0);
});
afterAll(() => t.close());

it('examples/subscribers/dashboard.ts prints a view at once and a new one after a change, the 20 busiest tools of toolCount', async () => {
  const { owner, session } = await runningRun(t);
  // 21 other tools, one call each: the view lists 20 of them beside the busiest, search.
  const others = Array.from({ length: 21 }, (_, i) => ({ id: `other-${i}`, name: `tool-${String(i).padStart(2, '0')}` }));
  await session.declare('m1', [{ id: 'call-1', name: 'search' }, { id: 'call-2', name: 'search' }, ...others]);
  const child = spawn(process.execPath, ['--import', 'tsx', 'examples/subscribers/dashboard.ts'], {
    cwd: join(import.meta.dirname, '../..'),
    env: { ...process.env, AUDIT_OWNER_TOKEN: owner, AUDIT_WS_URL: url.replace('http', 'ws') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const views = () => stdout.split('\n').filter(Boolean).map((line) => JSON.parse(line));
  try {
    await eventually(views, (seen) => seen.length > 0, { timeoutMs: 30_000, what: `the first view (${stderr})` });
    expect(views()[0]).toMatchObject({ runningCount: 0, running: [], toolCount: 0, tools: [] });
    const started = must(await session.toolStarted('call-1', 'search'));
    const [view] = (await eventually(views, (seen) => seen.some((v) => v.runningCount === 1), { what: `the running call (${stderr})` })).filter(
      (v) => v.runningCount === 1,
    );
    expect(view.running).toEqual([{ id: started.id, name: 'search', startedAt: started.startedAt, run: { thread: { id: expect.any(String) } } }]);
    expect(view).toMatchObject({ toolCount: 1, tools: [expect.objectContaining({ name: 'search', running: 1 })] });

    must(await session.toolStarted('call-2', 'search'));
    for (const call of others) must(await session.toolStarted(call.id, call.name));
    const [fleet] = (await eventually(views, (seen) => seen.some((v) => v.runningCount === 23), { what: `every call running (${stderr})` })).filter(
      (v) => v.runningCount === 23,
    );
    expect(fleet.toolCount).toBe(22);
    // The busiest first, then the rest of the 20 by name (equal calls).
    expect(fleet.tools.map((tool: { name: string }) => tool.name)).toEqual(['search', ...others.slice(0, 19).map((call) => call.name)]);
    expect(fleet.tools[0]).toMatchObject({ name: 'search', running: 2, calls: 2, failureRate: null });
  } finally {
    child.kill();
  }
});
