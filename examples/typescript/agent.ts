// A runtime on the bare client: one run of a tiny agent (a model call that declares a tool
// call, the tool, a final model call), every event recorded as it happens.
//
//   AUDIT_OWNER_TOKEN=<superadmin> AUDIT_WORKER_TOKEN=<worker> npx tsx examples/typescript/agent.ts
//
// AUDIT_URL defaults to http://127.0.0.1:4000/graphql. `npm start` prints both tokens on its
// first start; `npm run token -- --sub me --role superadmin` (and `--role worker`) mints more.
import { AuditClient, LeaseKeeper, SequenceCounter, isAuditApiError } from '@agent-audit/client';

// The tokens, or one line saying which to set (rather than a request refused for want of one).
for (const [name, role] of Object.entries({ AUDIT_OWNER_TOKEN: 'superadmin', AUDIT_WORKER_TOKEN: 'worker' })) {
  if (process.env[name]) continue;
  console.error(`${name} is not set: give it a ${role} token (\`npm start\` prints one on its first start; \`npm run -s token -- --sub me --role ${role}\` mints more)`);
  process.exit(1);
}
// #region clients
// One client per token: the owner's (your app's) and the worker's (the agent runtime's).
const url = process.env.AUDIT_URL ?? 'http://127.0.0.1:4000/graphql';
const owner = new AuditClient({ url, token: process.env.AUDIT_OWNER_TOKEN! });
const worker = new AuditClient({ url, token: process.env.AUDIT_WORKER_TOKEN! });

// The thread's owner opens a thread and queues a run for the agent.
const thread = await owner.createThread({ title: 'bare client example' });
await owner.appendMessage({ threadId: thread.id, role: 'USER', content: 'What is the weather in Paris?' });
const { id: runId } = await owner.createRun({ threadId: thread.id });
// #endregion clients

// Your model and your tool (stand-ins here).
const callModel = async (step: number) =>
  step === 1
    ? { content: 'Let me check.', tool_calls: [{ id: 'call_weather_1', name: 'get_weather', args: { city: 'Paris' } }] }
    : { content: 'It is sunny in Paris.', tool_calls: [] };
const getWeather = async ({ city, units = 'metric' }: { city: string; units?: string }) => `Sunny, ${units === 'metric' ? '21 °C' : '70 °F'} in ${city}`;

// #region worker
// The worker claims the run, keeps its lease alive and records each event.
const keeper = new LeaseKeeper(worker, await worker.claimRun(runId, 30), { leaseSeconds: 30 });
const sequence = new SequenceCounter(1);
try {
  for (let step = 1; ; step++) {
    const operationId = `model-${step}`;
    await worker.recordModelStarted({ lease: keeper.lease, operationId, sequence: sequence.next(), model: 'example-model', input: { step } });
    const reply = await callModel(step);
    await worker.recordModelFinished({
      lease: keeper.lease,
      operationId,
      status: 'COMPLETED',
      output: reply,
      toolCalls: reply.tool_calls, // what the model declared: [{ id, name, args }]
      sequence: sequence.next(),
    });
    if (reply.tool_calls.length === 0) break;
    for (const call of reply.tool_calls) {
      const input = { units: 'metric', ...call.args }; // what the tool really receives
      await worker.recordToolStarted({ lease: keeper.lease, toolCallId: call.id, name: call.name, effectiveInput: input, sequence: sequence.next() });
      const content = await getWeather(input);
      const output = { type: 'tool', tool_call_id: call.id, name: call.name, status: 'success', content };
      await worker.recordToolFinished({ lease: keeper.lease, toolCallId: call.id, output, sequence: sequence.next() });
    }
  }
  keeper.stop();
  // A finish whose answer was lost is sent again and refused, LEASE_LOST: its runStatus says how the run ended.
  await worker.finishRun({ lease: keeper.lease, status: 'COMPLETED' }).catch((error: unknown) => {
    if (!isAuditApiError(error, 'LEASE_LOST') || error.runStatus !== 'COMPLETED') throw error;
  });
} catch (error) {
  keeper.stop();
  if (!isAuditApiError(error, 'LEASE_LOST', 'LEASE_EXPIRED')) {
    await worker.finishRun({ lease: keeper.lease, status: 'FAILED', error: { message: String(error) } }).catch(() => undefined);
  }
  throw error;
}
// #endregion worker

// The owner reads the timeline back.
const { items } = await owner.threadAudits(thread.id);
for (const item of items) console.log(item.__typename === 'ModelAudit' ? `model ${item.operationId} ${item.status}` : `tool  ${item.name} ${item.status}`);
console.log(JSON.stringify({ threadId: thread.id, runId }));
