// Drives deterministic agent runs against a live server, through the worker client, so the
// audit timeline can be watched and checked.
//
//   npm run simulate -- [--url http://127.0.0.1:4000/graphql]
//     [--scenario all|normal|tool-error|cancel|interrupt-resume|parallel|large-output]
//     [--owner-token <jwt>] [--worker-token <jwt>]
//
// Tokens: the flags, else AUDIT_OWNER_TOKEN / AUDIT_WORKER_TOKEN, else minted here from
// AUTH_JWT_SECRET or the embedded server's .data/jwt-secret.
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as pause } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { mintToken } from '../auth/jwt.js';
import { loadConfig } from '../config.js';
import {
  AuditClient,
  LeaseKeeper,
  SequenceCounter,
  isAuditApiError,
  type DeclaredToolCallInput,
  type JsonObject,
  type JsonValue,
  type ThreadAuditItem,
} from '../client/index.js';

const SCENARIOS = {
  normal: normalScenario,
  'tool-error': toolErrorScenario,
  cancel: cancelScenario,
  'interrupt-resume': interruptResumeScenario,
  parallel: parallelScenario,
  'large-output': largeOutputScenario,
} satisfies Record<string, (sim: Simulator) => Promise<string>>;
type ScenarioName = keyof typeof SCENARIOS;

const LEASE_SECONDS = 15;
const MODEL = 'simulated-model-1';
// Long enough for a live dashboard to show RUNNING, short enough to keep a run under a second.
const STEP_MS = 40;

interface Simulator {
  owner: AuditClient;
  worker: AuditClient;
  log: (line: string) => void;
  /** Every keeper the scenario started, stopped when it ends however it ends. */
  keepers: LeaseKeeper[];
}

/** The worker's hold on one claimed run: its lease and its stream sequence. */
interface ClaimedRun {
  runId: string;
  keeper: LeaseKeeper;
  sequence: SequenceCounter;
}

// ---- Building blocks: one call of the runtime each ----

async function newThread(sim: Simulator, title: string, userText: string): Promise<string> {
  const thread = await sim.owner.createThread({ title: `simulator: ${title}` });
  await sim.owner.appendMessage({ threadId: thread.id, role: 'USER', content: userText });
  sim.log(`thread ${thread.id} created with a user message`);
  return thread.id;
}

async function startRun(sim: Simulator, threadId: string, resumeFromRunId?: string): Promise<ClaimedRun> {
  const run = await sim.owner.createRun({ threadId, resumeFromRunId });
  const lease = await sim.worker.claimRun(run.id, LEASE_SECONDS);
  const keeper = new LeaseKeeper(sim.worker, lease, {
    leaseSeconds: LEASE_SECONDS,
    onLost: (error) => sim.log(`lease keeper: lease lost (${error.code})`),
  });
  sim.keepers.push(keeper);
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
  await pause(STEP_MS);
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

// ---- Scenarios: each returns its thread id ----

async function normalScenario(sim: Simulator): Promise<string> {
  const threadId = await newThread(sim, 'normal', 'What is the weather in Paris?');
  const run = await startRun(sim, threadId);
  const weather = declare('get_weather', { city: 'Paris' });
  await modelCall(sim, run, 'model-1', 'Let me look that up.', [weather]);
  await toolStarted(sim, run, weather, { city: 'Paris', units: 'metric' });
  await pause(STEP_MS);
  await toolFinished(sim, run, weather, toolMessage(weather, 'Sunny, 21 °C'));
  await modelCall(sim, run, 'model-2', 'It is sunny and 21 °C in Paris.');
  await finishRun(sim, run, { status: 'COMPLETED' });
  return threadId;
}

async function toolErrorScenario(sim: Simulator): Promise<string> {
  const threadId = await newThread(sim, 'tool-error', 'Email me invoice 42.');
  const run = await startRun(sim, threadId);
  const lookup = declare('lookup_invoice', { invoice: 42 });
  const email = declare('send_email', { to: 'me@example.com' });
  await modelCall(sim, run, 'model-1', 'Looking up the invoice and sending it.', [lookup, email]);

  await toolStarted(sim, run, lookup, { invoice: 42 });
  await pause(STEP_MS);
  await toolFinished(sim, run, lookup, toolMessage(lookup, 'Invoice 42 not found', 'error'));

  await toolStarted(sim, run, email, { to: 'me@example.com', subject: 'Invoice 42' });
  await pause(STEP_MS);
  const bareError = { type: 'ConnectionError', message: 'SMTP server timed out' };
  const errored = await sim.worker.recordToolError({ lease: run.keeper.lease, toolCallId: email.id, error: bareError, sequence: run.sequence.next() });
  sim.log(`tool send_email (${email.id}) bare error recorded: ${errored.status}, awaitingRunTerminal=${errored.awaitingRunTerminal}`);

  await finishRun(sim, run, {
    status: 'FAILED',
    error: { message: 'send_email failed' },
    stateMessages: [toolMessage(email, bareError.message, 'error')],
  });
  return threadId;
}

async function cancelScenario(sim: Simulator): Promise<string> {
  const threadId = await newThread(sim, 'cancel', 'Export every order since 2019.');
  const run = await startRun(sim, threadId);
  const exportCall = declare('export_orders', { since: '2019-01-01' });
  await modelCall(sim, run, 'model-1', 'Starting the export.', [exportCall]);
  await toolStarted(sim, run, exportCall, { since: '2019-01-01', format: 'csv' });
  await pause(STEP_MS);

  const cancelled = await sim.owner.cancelRun(run.runId);
  sim.log(`owner cancelled the run while the tool ran: ${cancelled.status}`);
  try {
    await toolFinished(sim, run, exportCall, toolMessage(exportCall, 'exported 10000 orders'));
    throw new Error('the write after cancelRun was accepted; expected LEASE_LOST');
  } catch (error) {
    if (!isAuditApiError(error, 'LEASE_LOST')) throw error;
    sim.log(`worker's next write was refused: ${error.code} (${error.message})`);
  }
  return threadId;
}

async function interruptResumeScenario(sim: Simulator): Promise<string> {
  const threadId = await newThread(sim, 'interrupt-resume', 'Pay supplier invoice 7.');
  const first = await startRun(sim, threadId);
  const payment = declare('pay_invoice', { invoice: 7, amount: 120 });
  await modelCall(sim, first, 'model-1', 'Paying the invoice (needs approval).', [payment]);
  await toolStarted(sim, first, payment, { invoice: 7, amount: 120 });
  await pause(STEP_MS);
  await finishRun(sim, first, { status: 'INTERRUPTED' });
  const interrupted = await sim.owner.run(first.runId);
  const pending = interrupted?.toolCalls.find((call) => call.toolCallId === payment.id);
  sim.log(`the interrupted tool's ToolCall is back to ${pending?.status ?? '?'}`);

  const resumed = await startRun(sim, threadId, first.runId);
  await toolStarted(sim, resumed, payment, { invoice: 7, amount: 120, approved: true });
  await pause(STEP_MS);
  await toolFinished(sim, resumed, payment, toolMessage(payment, 'paid, reference PAY-7'));
  await modelCall(sim, resumed, 'model-2', 'The invoice is paid.');
  await finishRun(sim, resumed, { status: 'COMPLETED' });
  return threadId;
}

async function parallelScenario(sim: Simulator): Promise<string> {
  const threadId = await newThread(sim, 'parallel', 'Compare prices at three shops.');
  const run = await startRun(sim, threadId);
  const shops = ['north', 'south', 'east'];
  const calls = shops.map((shop) => declare('fetch_price', { shop }));
  await modelCall(sim, run, 'model-1', 'Asking the three shops at once.', calls);

  await allSettledOrThrow(calls.map((call, index) => toolStarted(sim, run, call, { shop: shops[index]!, item: 'kettle' })));
  // Finish in the order east, north, south: not the order they were declared or started.
  const finishDelays = [2, 3, 1].map((factor) => factor * STEP_MS);
  await allSettledOrThrow(
    calls.map(async (call, index) => {
      await pause(finishDelays[index]!);
      await toolFinished(sim, run, call, toolMessage(call, { shop: shops[index]!, price: 20 + index }));
    }),
  );
  await modelCall(sim, run, 'model-2', 'The north shop is cheapest.');
  await finishRun(sim, run, { status: 'COMPLETED' });
  return threadId;
}

async function largeOutputScenario(sim: Simulator): Promise<string> {
  const threadId = await newThread(sim, 'large-output', 'Dump the access log.');
  const run = await startRun(sim, threadId);
  const dump = declare('read_log', { file: 'access.log' });
  await modelCall(sim, run, 'model-1', 'Reading the log.', [dump]);
  await toolStarted(sim, run, dump, { file: 'access.log', lines: 3000 });
  const content = Array.from({ length: 3000 }, (_, i) => `${String(i).padStart(5, '0')} GET /item/${i} 200 ${'x'.repeat(80)}`).join('\n');
  sim.log(`tool output is ${Math.round(Buffer.byteLength(content) / 1024)} KB`);
  await pause(STEP_MS);
  await toolFinished(sim, run, dump, toolMessage(dump, content));
  await modelCall(sim, run, 'model-2', 'The log has 3000 lines.');
  await finishRun(sim, run, { status: 'COMPLETED' });
  return threadId;
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
  return `seq ${sequence.padEnd(6)} ${what.padEnd(26)} ${item.operationId.padEnd(14)} ${item.status.padEnd(10)} ${duration}  run ${item.runId}`;
}

function graphiqlQuery(threadId: string): string {
  return `query {
  threadAudits(threadId: "${threadId}") {
    truncated
    items {
      __typename runId operationId sequence finishedSequence status startedAt finishedAt durationMs
      ... on ModelAudit { model toolCalls { toolCallId name status } }
      ... on ToolAudit {
        toolCallId name effectiveInput error awaitingRunTerminal
        toolCall { status declaredInput effectiveInput }
        run { status }
      }
    }
  }
}`;
}

async function report(sim: Simulator, threadId: string): Promise<void> {
  const audits = await sim.owner.threadAudits(threadId);
  sim.log(`thread ${threadId}: ${audits.items.length} audits${audits.truncated ? ' (truncated)' : ''}`);
  for (const item of audits.items) sim.log(`  ${describeAudit(item)}`);
}

// ---- Tokens and main ----

function localJwtSecret(): string | undefined {
  const config = loadConfig();
  if (config.jwtSecret) return config.jwtSecret;
  const file = join(config.dataDir, 'jwt-secret');
  return existsSync(file) ? readFileSync(file, 'utf8').trim() : undefined;
}

async function resolveTokens(flags: { ownerToken?: string; workerToken?: string }): Promise<{ owner: string; worker: string }> {
  const owner = flags.ownerToken ?? process.env.AUDIT_OWNER_TOKEN;
  const worker = flags.workerToken ?? process.env.AUDIT_WORKER_TOKEN;
  if (owner && worker) return { owner, worker };
  const secret = localJwtSecret();
  if (!secret) {
    throw new Error(
      'No tokens: pass --owner-token and --worker-token, set AUDIT_OWNER_TOKEN and AUDIT_WORKER_TOKEN, ' +
        'or set AUTH_JWT_SECRET (the embedded server writes .data/jwt-secret on its first start).',
    );
  }
  return {
    owner: owner ?? (await mintToken(secret, { sub: 'simulator-admin', role: 'superadmin' }, '1h')),
    worker: worker ?? (await mintToken(secret, { sub: 'simulator-worker', role: 'worker' }, '1h')),
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      url: { type: 'string', default: 'http://127.0.0.1:4000/graphql' },
      scenario: { type: 'string', default: 'all' },
      'owner-token': { type: 'string' },
      'worker-token': { type: 'string' },
    },
  });
  const names = Object.keys(SCENARIOS) as ScenarioName[];
  const chosen = values.scenario === 'all' ? names : names.filter((name) => name === values.scenario);
  if (chosen.length === 0) {
    console.error(`unknown scenario "${values.scenario}"; one of: all, ${names.join(', ')}`);
    process.exitCode = 2;
    return;
  }

  const tokens = await resolveTokens({ ownerToken: values['owner-token'], workerToken: values['worker-token'] });
  const owner = new AuditClient({ url: values.url, token: tokens.owner });
  const worker = new AuditClient({ url: values.url, token: tokens.worker });
  let failures = 0;

  for (const name of chosen) {
    console.log(`\n== ${name} ==`);
    const sim: Simulator = { owner, worker, log: (line) => console.log(`  ${line}`), keepers: [] };
    try {
      const threadId = await SCENARIOS[name](sim);
      await report(sim, threadId);
      console.log(`\n  GraphiQL query for this thread:\n${graphiqlQuery(threadId).replace(/^/gm, '    ')}`);
    } catch (error) {
      failures += 1;
      const code = isAuditApiError(error) ? ` [${error.code}]` : '';
      console.error(`  FAILED${code}: ${error instanceof Error ? error.message : String(error)}`);
    } finally {
      for (const keeper of sim.keepers) keeper.stop();
    }
  }

  console.log(`\nOpen GraphiQL at ${values.url} and paste a query above, with these request headers:`);
  console.log(`  {"Authorization": "Bearer ${tokens.owner}"}`);
  console.log(`\n${chosen.length - failures} of ${chosen.length} scenarios completed.`);
  if (failures > 0) process.exitCode = 1;
}

await main();
