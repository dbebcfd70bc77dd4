// The examples the runtime authors' guide points at (examples/*/agent.ts), each run by bash with
// the guide's command as written (npx tsx <file>, the tokens in place of its placeholders, the
// server's address in AUDIT_URL) against the server process, and the run it recorded read back.
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AuditClient } from '@agent-audit/client';
import { backendName } from '../support/database.js';
import { withTimeout } from './support/wait.js';
import { e2eActors, serverForFile } from './support/server.js';

/** The commands of docs/runtime-authors.md (the code-blocks test checks they are its commands, as written). */
const COMMANDS = {
  typescript: 'AUDIT_OWNER_TOKEN=<superadmin> AUDIT_WORKER_TOKEN=<worker> npx tsx examples/typescript/agent.ts',
  aiSdk: 'AUDIT_OWNER_TOKEN=<superadmin> AUDIT_WORKER_TOKEN=<worker> npx tsx examples/ai-sdk/agent.ts',
  langgraph: 'AUDIT_OWNER_TOKEN=<superadmin> AUDIT_WORKER_TOKEN=<worker> npx tsx examples/langgraph/agent.ts',
  orchestrator: 'AUDIT_OWNER_TOKEN=<superadmin> AUDIT_WORKER_TOKEN=<worker> npx tsx examples/typescript/orchestrator.ts',
};
const REPO_ROOT = join(import.meta.dirname, '../..');

const server = serverForFile();

/** A command of the guide run by bash in the repository, its placeholders replaced by the tokens. */
async function runCommand(command: string, who: { owner: string; worker: string }): Promise<{ code: number | NodeJS.Signals; output: string }> {
  const filled = command.replace('<superadmin>', who.owner).replace('<worker>', who.worker);
  const child = spawn('bash', ['-c', filled], { cwd: REPO_ROOT, env: { ...process.env, AUDIT_URL: server.url }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | NodeJS.Signals>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal!)));
  try {
    return { code: await withTimeout(exited, 120_000, () => `${command} did not finish:\n${output}`), output };
  } finally {
    child.kill('SIGKILL');
  }
}

async function runExample(command: string) {
  const who = await e2eActors();
  const { code, output } = await runCommand(command, who);
  expect(code, output).toBe(0);
  const { threadId, runId } = JSON.parse(output.trim().split('\n').at(-1)!) as { threadId: string; runId: string };
  const owner = new AuditClient({ url: server.url, token: who.owner });
  const { items } = await owner.threadAudits(threadId);
  return { output, runId, run: await owner.run(runId), items, owner };
}

/** Each audit's kind, name and status; for tools the declared and the effective input. */
const glance = (items: Awaited<ReturnType<typeof runExample>>['items']) =>
  items.map((item) =>
    item.__typename === 'ModelAudit'
      ? ['model', item.status, item.toolCalls.length]
      : ['tool', item.name, item.status, item.toolCall.declaredInput, item.toolCall.effectiveInput],
  );

describe(`the examples against the server process (${backendName})`, () => {
  it('examples/typescript/agent.ts records model -> tool -> model with the bare client', async () => {
    const { run, items } = await runExample(COMMANDS.typescript);
    expect(run?.status).toBe('COMPLETED');
    expect(glance(items)).toEqual([
      ['model', 'COMPLETED', 1],
      ['tool', 'get_weather', 'COMPLETED', { city: 'Paris' }, { city: 'Paris', units: 'metric' }],
      ['model', 'COMPLETED', 0],
    ]);
  });

  it('examples/typescript/orchestrator.ts records a supervisor, its three sub-agents in their threads, and a handoff by resume', async () => {
    const { output, run, items, owner } = await runExample(COMMANDS.orchestrator);
    expect(output).toContain('All three look fine.');
    expect(run?.status).toBe('COMPLETED');
    const { threadId, subAgents } = JSON.parse(output.trim().split('\n').at(-1)!) as { threadId: string; subAgents: { topic: string; threadId: string; runId: string }[] };
    const rows = items.map((item) => (item.__typename === 'ModelAudit' ? ['model', item.runId, item.status] : ['tool', item.runId, item.operationId, item.status]));
    const first = (await owner.run(run!.id))!.resumedFrom!.id;
    // The supervisor's first run: a model call, three delegations at once, the handoff's declaration; then the resume.
    expect(rows[0]).toEqual(['model', first, 'COMPLETED']);
    expect(rows.slice(1, 4)).toEqual(expect.arrayContaining(['prices', 'stock', 'shipping'].map((topic) => ['tool', first, `delegate-${topic}`, 'COMPLETED'])));
    expect(rows.slice(4)).toEqual([
      ['model', first, 'COMPLETED'],
      ['tool', run!.id, 'summarise-1', 'COMPLETED'],
      ['model', run!.id, 'COMPLETED'],
    ]);
    const handedOver = items.find((item) => item.__typename === 'ToolAudit' && item.operationId === 'summarise-1');
    const declaring = items.find((item) => item.__typename === 'ModelAudit' && item.runId === first && item.toolCalls.some((call) => call.toolCallId === 'summarise-1'));
    expect(handedOver?.__typename === 'ToolAudit' && handedOver.declaredBy.id).toBe(declaring?.id);
    // Each delegation's envelope says where its sub-agent's audits are; each sub-agent run completed in its own thread.
    expect(subAgents.map((agent) => agent.topic).sort()).toEqual(['prices', 'shipping', 'stock']);
    for (const agent of subAgents) {
      expect(agent.threadId).not.toBe(threadId);
      const delegation = items.find((item) => item.__typename === 'ToolAudit' && item.operationId === `delegate-${agent.topic}`);
      expect(delegation?.__typename === 'ToolAudit' && delegation.output).toMatchObject({ artifact: { threadId: agent.threadId, runId: agent.runId } });
      expect((await owner.run(agent.runId))?.status).toBe('COMPLETED');
      expect((await owner.threadAudits(agent.threadId)).items.map((item) => item.__typename)).toEqual(['ModelAudit']);
    }
  });

  it('examples/ai-sdk/agent.ts records a generateText agent with parallel tool calls', async () => {
    const { output, run, items } = await runExample(COMMANDS.aiSdk);
    expect(output).toContain('Sunny in both. (run COMPLETED)');
    expect(run?.status).toBe('COMPLETED');
    expect(glance(items)).toEqual([
      ['model', 'COMPLETED', 2],
      ['tool', 'get_weather', 'COMPLETED', { city: 'Paris' }, { city: 'Paris', units: 'metric' }],
      ['tool', 'get_weather', 'COMPLETED', { city: 'Oslo', units: 'imperial' }, { city: 'Oslo', units: 'imperial' }],
      ['model', 'COMPLETED', 0],
    ]);
  });

  it('examples/langgraph/agent.ts records a LangGraph.js ReAct agent with parallel tool calls', async () => {
    const { output, run, items } = await runExample(COMMANDS.langgraph);
    expect(output).toContain('Sunny in both. (run COMPLETED)');
    expect(run?.status).toBe('COMPLETED');
    const rows = glance(items).map((row) => row.slice(0, 4));
    expect([rows[0], rows[3]]).toEqual([
      ['model', 'COMPLETED', 2],
      ['model', 'COMPLETED', 0],
    ]);
    // ToolNode runs the two calls in parallel: either may start first.
    expect(rows.slice(1, 3)).toEqual(
      expect.arrayContaining([
        ['tool', 'get_weather', 'COMPLETED', { city: 'Paris' }],
        ['tool', 'get_weather', 'COMPLETED', { city: 'Oslo', units: 'imperial' }],
      ]),
    );
    expect(rows).toHaveLength(4);
  });

  it('examples/langgraph/agent.ts --own-loop records the same run, claimed and finished around graph.invoke', async () => {
    const { output, run, items } = await runExample(`${COMMANDS.langgraph} --own-loop`);
    expect(output).toContain('Sunny in both. (run COMPLETED, own loop)');
    expect(run?.status).toBe('COMPLETED');
    const rows = glance(items).map((row) => row.slice(0, 4));
    expect([rows[0], rows[3]]).toEqual([
      ['model', 'COMPLETED', 2],
      ['model', 'COMPLETED', 0],
    ]);
    expect(rows.slice(1, 3)).toEqual(
      expect.arrayContaining([
        ['tool', 'get_weather', 'COMPLETED', { city: 'Paris' }],
        ['tool', 'get_weather', 'COMPLETED', { city: 'Oslo', units: 'imperial' }],
      ]),
    );
    expect(rows).toHaveLength(4);
  });
});

describe(`the SSE subscriber (docs/subscriptions.md) against the server process (${backendName})`, () => {
  /** examples/subscribers/sse.ts as the page runs it, until it exits (within a minute). */
  const follow = (env: Record<string, string>) =>
    spawnSync(process.execPath, ['--import', 'tsx', 'examples/subscribers/sse.ts'], { cwd: REPO_ROOT, env: { ...process.env, ...env }, encoding: 'utf8', timeout: 60_000 });

  it.each([
    ['a token the server refuses', 'not-a-token', '/graphql', /^UNAUTHENTICATED: /],
    ['a URL that is no GraphQL endpoint', null, '/graphql/nowhere', /^HTTP 404\b/],
  ])('ends on %s: one line, exit code 1, no retry', async (_, token, path, line) => {
    const who = await e2eActors();
    const { id } = await new AuditClient({ url: server.url, token: who.owner }).createThread({ title: 'refused' });
    const { status, stdout, stderr } = follow({ AUDIT_OWNER_TOKEN: token ?? who.owner, AUDIT_THREAD_ID: id, AUDIT_URL: new URL(path, server.url).href });
    expect(status, stderr).toBe(1);
    expect(stdout).toBe('');
    expect(stderr.trim().split('\n').filter((l) => !l.startsWith('connected to '))).toEqual([expect.stringMatching(line)]);
  }, 90_000);
});

describe('an example run without its variables says which one to set, in one line', () => {
  // Nothing of AUDIT_* from the test's own environment; no __pycache__ left in the work tree.
  const bare = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('AUDIT_')));
  /** Runs an example as its page says: npx tsx for TypeScript, python3 for Python. */
  const run = (file: string, env: Record<string, string>) =>
    spawnSync(file.endsWith('.py') ? 'python3' : process.execPath, file.endsWith('.py') ? [file] : ['--import', 'tsx', file], {
      cwd: REPO_ROOT,
      env: { ...bare, PYTHONPATH: join(REPO_ROOT, 'clients/python'), PYTHONDONTWRITEBYTECODE: '1', ...env },
      encoding: 'utf8',
      timeout: 60_000,
    });
  it.each([
    ['examples/typescript/agent.ts', {}, 'AUDIT_OWNER_TOKEN', /superadmin/],
    ['examples/typescript/agent.ts', { AUDIT_OWNER_TOKEN: 'x' }, 'AUDIT_WORKER_TOKEN', /worker/],
    ['examples/typescript/orchestrator.ts', { AUDIT_OWNER_TOKEN: 'x' }, 'AUDIT_WORKER_TOKEN', /worker/],
    ['examples/ai-sdk/agent.ts', {}, 'AUDIT_OWNER_TOKEN', /superadmin/],
    ['examples/langgraph/agent.ts', { AUDIT_OWNER_TOKEN: 'x' }, 'AUDIT_WORKER_TOKEN', /worker/],
    ['examples/python/agent.py', {}, 'AUDIT_OWNER_TOKEN', /superadmin/],
    ['examples/python/agent.py', { AUDIT_OWNER_TOKEN: 'x' }, 'AUDIT_WORKER_TOKEN', /worker/],
    ['examples/subscribers/graphql-ws.ts', { AUDIT_THREAD_ID: 't' }, 'AUDIT_OWNER_TOKEN', /superadmin/],
    ['examples/subscribers/sse.ts', { AUDIT_OWNER_TOKEN: 'x' }, 'AUDIT_THREAD_ID', /thread/],
    ['examples/subscribers/dashboard.ts', {}, 'AUDIT_OWNER_TOKEN', /superadmin/],
  ] as const)('%s with %o: %s', (file, env, variable, what) => {
    const { status, stdout, stderr } = run(file, env);
    expect(status, stderr).toBe(1);
    expect(stdout).toBe('');
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).toMatch(new RegExp(`^${variable} is not set: `));
    expect(stderr).toMatch(what);
  });
});
