// Drives deterministic agent runs against a live server, through the worker client, so the
// audit timeline can be watched and checked.
//
//   npm run simulate -- [--url http://127.0.0.1:4000/graphql]
//     [--scenario all|normal|tool-error|cancel|interrupt-resume|parallel|large-output]
//     [--thread <id>] [--step-ms 40] [--owner-token <jwt>] [--worker-token <jwt>]
//   npm run simulate -- --langgraph [--scenario all|langgraph-parallel|langgraph-tool-errors|
//     langgraph-interrupt-resume|langgraph-large-output] [the same options]
//
//   npm run simulate -- --ai-sdk [--scenario all|ai-sdk-parallel|ai-sdk-streamed-steps|
//     ai-sdk-tool-error|ai-sdk-large-output] [the same options]
//
// `--langgraph` runs a real LangGraph.js agent (src/cli/langgraph-agent.ts) recorded by the
// client's LangGraph adapter instead of the hand-written lifecycle calls; `--ai-sdk` a Vercel AI
// SDK agent (src/cli/ai-sdk-agent.ts) recorded by the client's AI SDK adapter.
// Each scenario checks the statuses it reads back and the process exits 1 if one differs.
// `--thread` runs the scenarios in an existing thread of the owner, e.g. one a dashboard is
// already subscribed to; `--step-ms` slows the runs down to watch them live.
// Tokens: the flags, else AUDIT_OWNER_TOKEN / AUDIT_WORKER_TOKEN, else minted here from
// AUTH_JWT_SECRET or the embedded server's DATA_DIR/jwt-secret (default .data).
import { randomUUID } from 'node:crypto';
import { setTimeout as pause } from 'node:timers/promises';
import { mintToken } from '../auth/jwt.js';
import { loadConfig } from '../config.js';
import { serverSigningSecretOf } from '../server/signing-secret.js';
import { parseCliArgs } from './args.js';
import {
  AuditClient,
  LeaseKeeper,
  SequenceCounter,
  isAuditApiError,
  type DeclaredToolCallInput,
  type JsonObject,
  type JsonValue,
  type AuditStatus,
  type ThreadAuditItem,
} from '@agent-audit/client';

const USAGE = `usage: npm run simulate -- [--url http://127.0.0.1:4000/graphql]
    [--scenario all|normal|tool-error|cancel|interrupt-resume|parallel|large-output]
    [--thread <id>] [--step-ms 40] [--owner-token <jwt>] [--worker-token <jwt>]
  npm run simulate -- --langgraph [--scenario all|langgraph-parallel|langgraph-tool-errors|
    langgraph-interrupt-resume|langgraph-large-output] [the same options]
  npm run simulate -- --ai-sdk [--scenario all|ai-sdk-parallel|ai-sdk-streamed-steps|
    ai-sdk-tool-error|ai-sdk-large-output] [the same options]

Drives realistic agent runs against a running server and prints where to watch them.
The threads belong to the owner token: --owner-token (or AUDIT_OWNER_TOKEN) to watch them with
a token you hold, e.g. the superadmin token \`npm start\` printed; without it the simulator mints
its own (sub "simulator-admin") with the server's secret, from the same AUTH_JWT_SECRET or
DATA_DIR as the server's (DATA_DIR/jwt-secret, default .data), and prints it.
Likewise --worker-token (or AUDIT_WORKER_TOKEN) for the worker.`;

const SCENARIOS = {
  normal: normalScenario,
  'tool-error': toolErrorScenario,
  cancel: cancelScenario,
  'interrupt-resume': interruptResumeScenario,
  parallel: parallelScenario,
  'large-output': largeOutputScenario,
} satisfies Record<string, Scenario>;
type Scenario = (sim: Simulator) => Promise<AuditStatus[]>;

const LEASE_SECONDS = 15;
const MODEL = 'simulated-model-1';

interface Simulator {
  owner: AuditClient;
  worker: AuditClient;
  log: (line: string) => void;
  /** The thread to run in; unset: each scenario creates its own. */
  threadId?: string;
  /** The pause between steps: long enough for a live dashboard to show RUNNING. */
  stepMs: number;
  /** The runs the scenario created, in order; its report and check look only at them. */
  runIds: string[];
  /** Every keeper the scenario started, stopped when it ends however it ends. */
  keepers: LeaseKeeper[];
}

const step = (sim: Simulator, factor = 1) => pause(sim.stepMs * factor);

/** The worker's hold on one claimed run: its lease and its stream sequence. */
interface ClaimedRun {
  runId: string;
  keeper: LeaseKeeper;
  sequence: SequenceCounter;
}

// ---- Building blocks: one call of the runtime each ----

async function newThread(sim: Simulator, title: string, userText: string): Promise<string> {
  sim.threadId ??= (await sim.owner.createThread({ title: `simulator: ${title}` })).id;
  await sim.owner.appendMessage({ threadId: sim.threadId, role: 'USER', content: userText });
  sim.log(`thread ${sim.threadId}: user message appended`);
  return sim.threadId;
}

async function startRun(sim: Simulator, threadId: string, resumeFromRunId?: string): Promise<ClaimedRun> {
  const run = await sim.owner.createRun({ threadId, resumeFromRunId });
  const lease = await sim.worker.claimRun(run.id, LEASE_SECONDS);
  const keeper = new LeaseKeeper(sim.worker, lease, {
    leaseSeconds: LEASE_SECONDS,
    onLost: (error) => sim.log(`lease keeper: lease lost (${error.code})`),
  });
  sim.keepers.push(keeper);
  sim.runIds.push(run.id);
  sim.log(`run ${run.id} created${resumeFromRunId ? ` resuming ${resumeFromRunId}` : ''}, claimed at epoch ${lease.epoch}`);
  return { runId: run.id, keeper, sequence: new SequenceCounter(1) };
}

const declare = (name: string, args: JsonObject): DeclaredToolCallInput => ({
  id: `call_${randomUUID().slice(0, 8)}`,
  name,
  args,
});

async function modelCall(
  sim: Simulator,
  run: ClaimedRun,
  operationId: string,
  reply: string,
  toolCalls: DeclaredToolCallInput[] = [],
): Promise<void> {
  await sim.worker.recordModelStarted({
    lease: run.keeper.lease,
    operationId,
    sequence: run.sequence.next(),
    model: MODEL,
    input: { messages: [{ role: 'user', content: 'simulated prompt' }] },
  });
  await step(sim);
  const audit = await sim.worker.recordModelFinished({
    lease: run.keeper.lease,
    operationId,
    status: 'COMPLETED',
    output: { role: 'assistant', content: reply, tool_calls: toolCalls.map(({ id, name, args }) => ({ id, name, args })) },
    usage: { input_tokens: 120, output_tokens: 30 },
    toolCalls,
    sequence: run.sequence.next(),
  });
  const declared = toolCalls.length ? `, declared ${toolCalls.map((call) => call.name).join(', ')}` : '';
  sim.log(`model ${operationId} ${audit.status} in ${audit.durationMs ?? '-'} ms${declared}`);
}

async function toolStarted(sim: Simulator, run: ClaimedRun, call: DeclaredToolCallInput, effectiveInput: JsonObject): Promise<void> {
  // The sequence is taken before the first await: concurrent starts keep their call order.
  const sequence = run.sequence.next();
  const audit = await sim.worker.recordToolStarted({ lease: run.keeper.lease, toolCallId: call.id, name: call.name, effectiveInput, sequence });
  sim.log(`tool ${call.name} (${call.id}) started: ${audit.status}, seq ${audit.sequence}`);
}

function toolMessage(call: DeclaredToolCallInput, content: JsonValue, status: 'success' | 'error' = 'success'): JsonObject {
  return { type: 'tool', tool_call_id: call.id, name: call.name, content, status };
}

async function toolFinished(sim: Simulator, run: ClaimedRun, call: DeclaredToolCallInput, output: JsonObject): Promise<void> {
  const sequence = run.sequence.next();
  const audit = await sim.worker.recordToolFinished({ lease: run.keeper.lease, toolCallId: call.id, output, sequence });
  sim.log(`tool ${call.name} (${call.id}) finished: ${audit.status} in ${audit.durationMs ?? '-'} ms, seq ${audit.finishedSequence}`);
}

async function finishRun(sim: Simulator, run: ClaimedRun, input: { status: 'COMPLETED' | 'FAILED' | 'INTERRUPTED'; error?: JsonValue; stateMessages?: JsonValue[] }): Promise<void> {
  run.keeper.stop();
  const finished = await sim.worker.finishRun({ lease: run.keeper.lease, ...input });
  sim.log(`run ${finished.id} finished: ${finished.status}`);
}

// ---- Scenarios: each returns the statuses its audits must end with, in timeline order ----

async function normalScenario(sim: Simulator): Promise<AuditStatus[]> {
  const threadId = await newThread(sim, 'normal', 'What is the weather in Paris?');
  const run = await startRun(sim, threadId);
  const weather = declare('get_weather', { city: 'Paris' });
  await modelCall(sim, run, 'model-1', 'Let me look that up.', [weather]);
  await toolStarted(sim, run, weather, { city: 'Paris', units: 'metric' });
  await step(sim);
  await toolFinished(sim, run, weather, toolMessage(weather, 'Sunny, 21 °C'));
  await modelCall(sim, run, 'model-2', 'It is sunny and 21 °C in Paris.');
  await finishRun(sim, run, { status: 'COMPLETED' });
  return ['COMPLETED', 'COMPLETED', 'COMPLETED'];
}

async function toolErrorScenario(sim: Simulator): Promise<AuditStatus[]> {
  const threadId = await newThread(sim, 'tool-error', 'Email me invoice 42.');
  const run = await startRun(sim, threadId);
  const lookup = declare('lookup_invoice', { invoice: 42 });
  const email = declare('send_email', { to: 'me@example.com' });
  await modelCall(sim, run, 'model-1', 'Looking up the invoice and sending it.', [lookup, email]);

  await toolStarted(sim, run, lookup, { invoice: 42 });
  await step(sim);
  await toolFinished(sim, run, lookup, toolMessage(lookup, 'Invoice 42 not found', 'error'));

  await toolStarted(sim, run, email, { to: 'me@example.com', subject: 'Invoice 42' });
  await step(sim);
  const bareError = { type: 'ConnectionError', message: 'SMTP server timed out' };
  const errored = await sim.worker.recordToolError({ lease: run.keeper.lease, toolCallId: email.id, error: bareError, sequence: run.sequence.next() });
  sim.log(`tool send_email (${email.id}) bare error recorded: ${errored.status}, awaitingRunTerminal=${errored.awaitingRunTerminal}`);

  await finishRun(sim, run, {
    status: 'FAILED',
    error: { message: 'send_email failed' },
    stateMessages: [toolMessage(email, bareError.message, 'error')],
  });
  return ['COMPLETED', 'FAILED', 'FAILED'];
}

async function cancelScenario(sim: Simulator): Promise<AuditStatus[]> {
  const threadId = await newThread(sim, 'cancel', 'Export every order since 2019.');
  const run = await startRun(sim, threadId);
  const exportCall = declare('export_orders', { since: '2019-01-01' });
  await modelCall(sim, run, 'model-1', 'Starting the export.', [exportCall]);
  await toolStarted(sim, run, exportCall, { since: '2019-01-01', format: 'csv' });
  await step(sim);

  const cancelled = await sim.owner.cancelRun(run.runId);
  sim.log(`owner cancelled the run while the tool ran: ${cancelled.status}`);
  try {
    await toolFinished(sim, run, exportCall, toolMessage(exportCall, 'exported 10000 orders'));
    throw new Error('the write after cancelRun was accepted; expected LEASE_LOST');
  } catch (error) {
    if (!isAuditApiError(error, 'LEASE_LOST')) throw error;
    sim.log(`worker's next write was refused: ${error.code} (${error.message})`);
  }
  return ['COMPLETED', 'CANCELLED'];
}

async function interruptResumeScenario(sim: Simulator): Promise<AuditStatus[]> {
  const threadId = await newThread(sim, 'interrupt-resume', 'Pay supplier invoice 7.');
  const first = await startRun(sim, threadId);
  const payment = declare('pay_invoice', { invoice: 7, amount: 120 });
  await modelCall(sim, first, 'model-1', 'Paying the invoice (needs approval).', [payment]);
  await toolStarted(sim, first, payment, { invoice: 7, amount: 120 });
  await step(sim);
  await finishRun(sim, first, { status: 'INTERRUPTED' });
  const interrupted = await sim.owner.run(first.runId);
  const pending = interrupted?.toolCalls.find((call) => call.toolCallId === payment.id);
  sim.log(`the interrupted tool's ToolCall is back to ${pending?.status ?? '?'}`);

  const resumed = await startRun(sim, threadId, first.runId);
  await toolStarted(sim, resumed, payment, { invoice: 7, amount: 120, approved: true });
  await step(sim);
  await toolFinished(sim, resumed, payment, toolMessage(payment, 'paid, reference PAY-7'));
  await modelCall(sim, resumed, 'model-2', 'The invoice is paid.');
  await finishRun(sim, resumed, { status: 'COMPLETED' });
  return ['COMPLETED', 'INTERRUPTED', 'COMPLETED', 'COMPLETED'];
}

async function parallelScenario(sim: Simulator): Promise<AuditStatus[]> {
  const threadId = await newThread(sim, 'parallel', 'Compare prices at three shops.');
  const run = await startRun(sim, threadId);
  const shops = ['north', 'south', 'east'];
  const calls = shops.map((shop) => declare('fetch_price', { shop }));
  await modelCall(sim, run, 'model-1', 'Asking the three shops at once.', calls);

  await allSettledOrThrow(calls.map((call, index) => toolStarted(sim, run, call, { shop: shops[index]!, item: 'kettle' })));
  // Finish in the order east, north, south: not the order they were declared or started.
  const finishFactors = [2, 3, 1];
  await allSettledOrThrow(
    calls.map(async (call, index) => {
      await step(sim, finishFactors[index]);
      await toolFinished(sim, run, call, toolMessage(call, { shop: shops[index]!, price: 20 + index }));
    }),
  );
  await modelCall(sim, run, 'model-2', 'The north shop is cheapest.');
  await finishRun(sim, run, { status: 'COMPLETED' });
  return ['COMPLETED', 'COMPLETED', 'COMPLETED', 'COMPLETED', 'COMPLETED'];
}

async function largeOutputScenario(sim: Simulator): Promise<AuditStatus[]> {
  const threadId = await newThread(sim, 'large-output', 'Dump the access log.');
  const run = await startRun(sim, threadId);
  const dump = declare('read_log', { file: 'access.log' });
  await modelCall(sim, run, 'model-1', 'Reading the log.', [dump]);
  await toolStarted(sim, run, dump, { file: 'access.log', lines: 3000 });
  const content = Array.from({ length: 3000 }, (_, i) => `${String(i).padStart(5, '0')} GET /item/${i} 200 ${'x'.repeat(80)}`).join('\n');
  sim.log(`tool output is ${Math.round(Buffer.byteLength(content) / 1024)} KB`);
  await step(sim);
  await toolFinished(sim, run, dump, toolMessage(dump, content));
  await modelCall(sim, run, 'model-2', 'The log has 3000 lines.');
  await finishRun(sim, run, { status: 'COMPLETED' });
  return ['COMPLETED', 'COMPLETED', 'COMPLETED'];
}

/** Like Promise.all, but lets every call end before reporting the first failure. */
async function allSettledOrThrow(calls: Promise<unknown>[]): Promise<void> {
  const failure = (await Promise.allSettled(calls)).find((result) => result.status === 'rejected');
  if (failure) throw failure.reason;
}

// ---- Reporting ----

function describeAudit(item: ThreadAuditItem): string {
  const what = item.__typename === 'ToolAudit' ? `tool  ${item.name}` : `model ${item.model ?? ''}`;
  const sequence = item.finishedSequence ? `${item.sequence}..${item.finishedSequence}` : item.sequence;
  const duration = item.durationMs === null ? '-' : `${item.durationMs} ms`;
  return `seq ${sequence.padEnd(6)} ${what.padEnd(26)} ${item.operationId.padEnd(14)} ${item.status.padEnd(11)} ${duration.padEnd(7)} run ${item.runId}`;
}

/** Prints the audits of the scenario's runs and checks that they ended as `expected`. */
async function reportAndCheck(sim: Simulator, expected: AuditStatus[]): Promise<void> {
  const { items } = await sim.owner.threadAudits(sim.threadId!);
  const audits = items.filter((item) => sim.runIds.includes(item.runId));
  sim.log(`read back through threadAudits: ${audits.length} audits`);
  for (const item of audits) sim.log(`  ${describeAudit(item)}`);
  const statuses = audits.map((item) => item.status);
  if (statuses.join() !== expected.join()) {
    throw new Error(`expected the audits to end ${expected.join(', ')}; they ended ${statuses.join(', ') || 'missing'}`);
  }
}

const timelineQuery = (threadId: string) => `query {
  threadAudits(threadId: "${threadId}") {
    truncated
    items {
      __typename runId operationId sequence finishedSequence status startedAt finishedAt durationMs
      ... on ModelAudit { model input output toolCalls { toolCallId name status } }
      ... on ToolAudit {
        toolCallId name effectiveInput output error awaitingRunTerminal
        toolCall { status declaredInput effectiveInput output }
        run { status }
      }
    }
  }
}`;

const liveSubscription = (threadId: string) => `subscription {
  auditChanged(threadId: "${threadId}") {
    __typename runId operationId sequence status durationMs
    ... on ToolAudit { name effectiveInput error toolCall { status output } }
  }
}`;

const indent = (text: string) => text.replace(/^/gm, '    ');

// ---- Tokens and main ----

/** The flags' tokens, else the environment's, else minted with the server's secret (never a new one). */
async function resolveTokens(flags: { ownerToken?: string; workerToken?: string }): Promise<{ owner: string; worker: string }> {
  const owner = flags.ownerToken || process.env.AUDIT_OWNER_TOKEN || undefined;
  const worker = flags.workerToken || process.env.AUDIT_WORKER_TOKEN || undefined;
  if (owner && worker) return { owner, worker };
  const secret = serverSigningSecretOf(loadConfig());
  return {
    owner: owner ?? (await mintToken(secret, { sub: 'simulator-admin', role: 'superadmin' }, '1h')),
    worker: worker ?? (await mintToken(secret, { sub: 'simulator-worker', role: 'worker' }, '1h')),
  };
}

/** Loaded only for --langgraph: the other scenarios need no LangChain installed. */
async function langgraphScenarios(): Promise<Record<string, Scenario>> {
  const { LANGGRAPH_SCENARIOS } = await import('./langgraph-scenarios.js');
  return Object.fromEntries(
    Object.entries(LANGGRAPH_SCENARIOS).map(([name, scenario]): [string, Scenario] => [
      name,
      (sim) => scenario({ ...sim, newThread: (title, userText) => newThread(sim, title, userText) }),
    ]),
  );
}

/** Loaded only for --ai-sdk: the other scenarios need no AI SDK installed. */
async function aiSdkScenarios(): Promise<Record<string, Scenario>> {
  const { AI_SDK_SCENARIOS } = await import('./ai-sdk-scenarios.js');
  return Object.fromEntries(
    Object.entries(AI_SDK_SCENARIOS).map(([name, scenario]): [string, Scenario] => [
      name,
      (sim) => scenario({ ...sim, newThread: (title, userText) => newThread(sim, title, userText) }),
    ]),
  );
}

async function main(): Promise<void> {
  const values = parseCliArgs(
    {
      url: { type: 'string', default: 'http://127.0.0.1:4000/graphql' },
      scenario: { type: 'string', default: 'all' },
      thread: { type: 'string' },
      'step-ms': { type: 'string', default: '40' },
      'owner-token': { type: 'string' },
      'worker-token': { type: 'string' },
      langgraph: { type: 'boolean', default: false },
      'ai-sdk': { type: 'boolean', default: false },
    },
    USAGE,
  );
  const scenarios = values.langgraph
    ? await langgraphScenarios()
    : values['ai-sdk']
      ? await aiSdkScenarios()
      : (SCENARIOS as Record<string, Scenario>);
  const names = Object.keys(scenarios);
  const chosen = values.scenario === 'all' ? names : names.filter((name) => name === values.scenario);
  const stepMs = Number(values['step-ms']);
  if (chosen.length === 0 || !Number.isInteger(stepMs) || stepMs < 0) {
    console.error(`usage: --scenario all|${names.join('|')} [--thread <id>] [--step-ms <non-negative integer>]`);
    process.exitCode = 2;
    return;
  }

  let tokens: { owner: string; worker: string };
  try {
    tokens = await resolveTokens({ ownerToken: values['owner-token'], workerToken: values['worker-token'] });
  } catch (error) {
    console.error(`No tokens: pass --owner-token and --worker-token, or let the simulator mint them. ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
    return;
  }
  const owner = new AuditClient({ url: values.url, token: tokens.owner });
  const worker = new AuditClient({ url: values.url, token: tokens.worker });
  const outcomes: { name: string; threadId?: string; ok: boolean }[] = [];

  for (const name of chosen) {
    console.log(`\n== ${name} ==`);
    const sim: Simulator = {
      owner,
      worker,
      log: (line) => console.log(`  ${line}`),
      threadId: values.thread,
      stepMs,
      runIds: [],
      keepers: [],
    };
    try {
      const expected = await scenarios[name]!(sim);
      await reportAndCheck(sim, expected);
      outcomes.push({ name, threadId: sim.threadId, ok: true });
    } catch (error) {
      const code = isAuditApiError(error) ? ` [${error.code}]` : '';
      console.error(`  FAILED${code}: ${error instanceof Error ? error.message : String(error)}`);
      outcomes.push({ name, threadId: sim.threadId, ok: false });
    } finally {
      for (const keeper of sim.keepers) keeper.stop();
    }
  }

  console.log('\n== where to look ==');
  for (const { name, threadId, ok } of outcomes) {
    const page = threadId ? `  ${new URL(`/#thread=${threadId}`, values.url)}` : '';
    console.log(`  ${name.padEnd(26)} ${ok ? 'ok    ' : 'FAILED'} thread ${threadId ?? '-'}${page}`);
  }
  const threadId = outcomes.find((outcome) => outcome.threadId)?.threadId ?? '<thread id>';
  console.log(`\nOpen a scenario's timeline page at its address above and sign in with the owner token`);
  console.log(`    ${tokens.owner}`);
  console.log(`\nOr open GraphiQL at ${values.url} with the request headers`);
  console.log(`    {"Authorization": "Bearer ${tokens.owner}"}`);
  console.log(`and read a timeline:\n${indent(timelineQuery(threadId))}`);
  console.log(`\nTo watch runs live, run this subscription in another GraphiQL tab:\n${indent(liveSubscription(threadId))}`);
  console.log('then run scenarios into that thread, slowed down:');
  // With this run's tokens: without them the simulator mints its own owner, who may not write to this thread.
  console.log(
    `    npm run simulate -- --url ${values.url} --thread ${threadId} --scenario normal --step-ms 1000 --owner-token ${tokens.owner} --worker-token ${tokens.worker}`,
  );

  const failures = outcomes.filter((outcome) => !outcome.ok).length;
  console.log(`\n${chosen.length - failures} of ${chosen.length} scenarios completed as expected.`);
  if (failures > 0) process.exitCode = 1;
}

await main();
