// A supervisor agent on the bare client: its model call delegates to three sub-agents at once (three
// parallel tool calls), each sub-agent is a run of its own thread, and the supervisor's run is
// interrupted and resumed by a second worker (a handoff) before its final answer.
//
//   AUDIT_OWNER_TOKEN=<superadmin> AUDIT_WORKER_TOKEN=<worker> npx tsx examples/typescript/orchestrator.ts
//
// AUDIT_URL defaults to http://127.0.0.1:4000/graphql. The last line printed is
// {"threadId", "runId", "subAgents"}: the supervisor's thread, its resumed run, and each sub-agent's
// thread and run.
import { AuditClient, LeaseKeeper, SequenceCounter, type RunLease } from '@agent-audit/client';

for (const [name, role] of Object.entries({ AUDIT_OWNER_TOKEN: 'superadmin', AUDIT_WORKER_TOKEN: 'worker' })) {
  if (process.env[name]) continue;
  console.error(`${name} is not set: give it a ${role} token (\`npm start\` prints one on its first start; \`npm run -s token -- --sub me --role ${role}\` mints more)`);
  process.exit(1);
}
const url = process.env.AUDIT_URL ?? 'http://127.0.0.1:4000/graphql';
const owner = new AuditClient({ url, token: process.env.AUDIT_OWNER_TOKEN! });
const worker = new AuditClient({ url, token: process.env.AUDIT_WORKER_TOKEN! });

/** Claims a run and keeps its lease alive; `run` records the agent's events, then ends the run. */
async function leased<T>(runId: string, run: (lease: () => RunLease, sequence: SequenceCounter) => Promise<T>, ending: 'COMPLETED' | 'INTERRUPTED' = 'COMPLETED') {
  const keeper = new LeaseKeeper(worker, await worker.claimRun(runId, 30), { leaseSeconds: 30 });
  try {
    const result = await run(() => keeper.lease, new SequenceCounter(1));
    keeper.stop();
    await worker.finishRun({ lease: keeper.lease, status: ending });
    return result;
  } catch (error) {
    keeper.stop();
    await worker.finishRun({ lease: keeper.lease, status: 'FAILED', error: { message: String(error) } }).catch(() => undefined);
    throw error;
  }
}

/** One model call, recorded with the tool calls it declares. */
async function modelCall(lease: RunLease, sequence: SequenceCounter, operationId: string, reply: { content: string; tool_calls: { id: string; name: string; args: Record<string, unknown> }[] }) {
  await worker.recordModelStarted({ lease, operationId, sequence: sequence.next(), model: 'example-model', input: {} });
  await worker.recordModelFinished({ lease, operationId, status: 'COMPLETED', output: reply, toolCalls: reply.tool_calls, sequence: sequence.next() });
}

// #region sub-agent
// A sub-agent is a run of its own thread (a run resumes only a run of its own thread). The
// supervisor's tool returns its answer, and the envelope's artifact says where its audits are.
async function subAgent(topic: string) {
  const thread = await owner.createThread({ title: `sub-agent: ${topic}` });
  const { id: runId } = await owner.createRun({ threadId: thread.id });
  const answer = await leased(runId, async (lease, sequence) => {
    await modelCall(lease(), sequence, 'model-1', { content: `${topic}: looks fine.`, tool_calls: [] });
    return `${topic}: looks fine.`;
  });
  return { answer, threadId: thread.id, runId };
}
// #endregion sub-agent

const thread = await owner.createThread({ title: 'supervisor' });
const { id: firstRunId } = await owner.createRun({ threadId: thread.id });
const topics = ['prices', 'stock', 'shipping'];
const subAgents: { topic: string; threadId: string; runId: string }[] = [];

// #region supervisor
// The supervisor's model delegates to three sub-agents in one response; the three tools run at once.
await leased(
  firstRunId,
  async (lease, sequence) => {
    const calls = topics.map((topic) => ({ id: `delegate-${topic}`, name: 'delegate', args: { topic } }));
    await modelCall(lease(), sequence, 'model-1', { content: 'Asking my team.', tool_calls: calls });
    await Promise.all(
      calls.map(async (call) => {
        // The sequence is taken when each event happens, so the timeline keeps the real order.
        await worker.recordToolStarted({ lease: lease(), toolCallId: call.id, name: call.name, effectiveInput: call.args, sequence: sequence.next() });
        const { answer, threadId, runId } = await subAgent(call.args.topic);
        subAgents.push({ topic: call.args.topic, threadId, runId });
        const output = { type: 'tool', tool_call_id: call.id, name: call.name, status: 'success', content: answer, artifact: { threadId, runId } };
        await worker.recordToolFinished({ lease: lease(), toolCallId: call.id, output, sequence: sequence.next() });
      }),
    );
    // A call declared here but handed to the next agent: it stays PENDING when this run is interrupted.
    await modelCall(lease(), sequence, 'model-2', { content: 'Handing the summary over.', tool_calls: [{ id: 'summarise-1', name: 'summarise', args: {} }] });
  },
  'INTERRUPTED',
);

// The handoff: the owner resumes the run, and the next agent (here the same worker) starts the
// call the first run declared: it binds to that run's model call through the resume.
const { id: runId } = await owner.createRun({ threadId: thread.id, resumeFromRunId: firstRunId });
await leased(runId, async (lease, sequence) => {
  await worker.recordToolStarted({ lease: lease(), toolCallId: 'summarise-1', name: 'summarise', effectiveInput: {}, sequence: sequence.next() });
  const output = { type: 'tool', tool_call_id: 'summarise-1', name: 'summarise', status: 'success', content: 'All three look fine.' };
  await worker.recordToolFinished({ lease: lease(), toolCallId: 'summarise-1', output, sequence: sequence.next() });
  await modelCall(lease(), sequence, 'model-1', { content: 'All three look fine.', tool_calls: [] });
});
// #endregion supervisor

await worker.close();
console.log('All three look fine.');
console.log(JSON.stringify({ threadId: thread.id, runId, subAgents }));
