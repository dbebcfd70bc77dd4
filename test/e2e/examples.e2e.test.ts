// The examples the runtime authors' guide points at (examples/*/agent.ts), each run as a user
// would run it (npx tsx <file>, tokens in the environment) against the server process, and the
// run it recorded read back.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditClient } from '@agent-audit/client';
import { backendName } from '../support/database.js';
import { createE2EStorage, e2eActors, killServers, runScript, startServer, type E2EStorage, type ServerProcess } from './support/server.js';

let storage: E2EStorage;
let server: ServerProcess;

beforeAll(async () => {
  storage = await createE2EStorage();
  server = await startServer(storage);
}, 120_000);

afterAll(async () => {
  await killServers();
  await storage?.remove();
});

async function runExample(file: string) {
  const who = await e2eActors();
  const { code, output } = await runScript(file, [], { AUDIT_URL: server.url, AUDIT_OWNER_TOKEN: who.owner, AUDIT_WORKER_TOKEN: who.worker });
  expect(code, output).toBe(0);
  const { threadId, runId } = JSON.parse(output.trim().split('\n').at(-1)!) as { threadId: string; runId: string };
  const owner = new AuditClient({ url: server.url, token: who.owner });
  const { items } = await owner.threadAudits(threadId);
  return { output, runId, run: await owner.run(runId), items };
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
    const { run, items } = await runExample('examples/typescript/agent.ts');
    expect(run?.status).toBe('COMPLETED');
    expect(glance(items)).toEqual([
      ['model', 'COMPLETED', 1],
      ['tool', 'get_weather', 'COMPLETED', { city: 'Paris' }, { city: 'Paris', units: 'metric' }],
      ['model', 'COMPLETED', 0],
    ]);
  });

  it('examples/ai-sdk/agent.ts records a generateText agent with parallel tool calls', async () => {
    const { output, run, items } = await runExample('examples/ai-sdk/agent.ts');
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
    const { output, run, items } = await runExample('examples/langgraph/agent.ts');
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
});
