// `npm run simulate -- --langgraph`: the same runs as the hand-written scenarios, but made by a
// real LangGraph.js agent (src/cli/langgraph-agent.ts) and recorded by the client's adapter.
import { Command } from '@langchain/langgraph';
import type { AuditClient, AuditStatus } from '@agent-audit/client';
import { LangGraphAudit } from '@agent-audit/client/langgraph';
import { LARGE_LOG_LINES, buildReactAgent, callTool, turn, type ReactAgent } from './langgraph-agent.js';

export interface LangGraphSimulator {
  owner: AuditClient;
  worker: AuditClient;
  log: (line: string) => void;
  stepMs: number;
  runIds: string[];
  /** The thread to run in (created with the user's message when the simulator has none). */
  newThread: (title: string, userText: string) => Promise<string>;
}

const LEASE_SECONDS = 15;

/** One recorded invocation in a fresh run of the thread (resuming `resumeFromRunId` if given). */
async function invokeRecorded(
  sim: LangGraphSimulator,
  graph: ReactAgent,
  threadId: string,
  input: Parameters<ReactAgent['invoke']>[0],
  resumeFromRunId?: string,
) {
  const run = await sim.owner.createRun({ threadId, resumeFromRunId });
  sim.runIds.push(run.id);
  sim.log(`run ${run.id} created${resumeFromRunId ? ` resuming ${resumeFromRunId}` : ''}; the graph runs with the audit handler`);
  const audit = new LangGraphAudit(sim.worker, {
    leaseSeconds: LEASE_SECONDS,
    onWriteError: (error) => sim.log(`audit write refused: ${error instanceof Error ? error.message : String(error)}`),
  });
  // One LangGraph thread per simulated graph, so a resume continues its own checkpoint.
  const config = { configurable: { thread_id: `${threadId}:${sim.runIds[0]}` } };
  const finished = await audit.invoke(run.id, graph, input, config);
  sim.log(`run ${run.id} finished by the adapter: ${finished.status}`);
  if (finished.writeErrors.length > 0) throw new Error(`${finished.writeErrors.length} audit writes were refused`);
  return { runId: run.id, ...finished };
}

const ask = (content: string) => ({ messages: [{ role: 'user', content }] });

async function parallel(sim: LangGraphSimulator): Promise<AuditStatus[]> {
  const question = 'What is the weather in Paris and in Oslo?';
  const threadId = await sim.newThread('langgraph: parallel tools', question);
  const paris = callTool('get_weather', { city: 'Paris' });
  const oslo = callTool('get_weather', { city: 'Oslo', units: 'imperial' });
  const graph = buildReactAgent([turn('Checking both cities at once.', [paris, oslo]), turn('Sunny in both.')], { modelSleepMs: sim.stepMs });
  await invokeRecorded(sim, graph, threadId, ask(question));
  return ['COMPLETED', 'COMPLETED', 'COMPLETED', 'COMPLETED'];
}

async function toolErrors(sim: LangGraphSimulator): Promise<AuditStatus[]> {
  const question = 'Email me invoice 42.';
  const threadId = await sim.newThread('langgraph: tool errors', question);
  // lookup_invoice answers an error ToolMessage; send_email throws (a bare error settled from the final state).
  const calls = [callTool('lookup_invoice', { invoice: 42 }), callTool('send_email', { to: 'me@example.com' })];
  const graph = buildReactAgent([turn('Looking it up and mailing it.', calls), turn('Neither worked.')], { modelSleepMs: sim.stepMs });
  await invokeRecorded(sim, graph, threadId, ask(question));
  return ['COMPLETED', 'FAILED', 'FAILED', 'COMPLETED'];
}

async function interruptResume(sim: LangGraphSimulator): Promise<AuditStatus[]> {
  const question = 'Pay supplier invoice 7.';
  const threadId = await sim.newThread('langgraph: interrupt and resume', question);
  const pay = callTool('pay_invoice', { invoice: 7, amount: 120 });
  const graph = buildReactAgent([turn('Paying the invoice (needs approval).', [pay]), turn('The invoice is paid.')], {
    modelSleepMs: sim.stepMs,
  });
  const first = await invokeRecorded(sim, graph, threadId, ask(question));
  const pending = (first.state as { __interrupt__?: { value: unknown }[] }).__interrupt__ ?? [];
  sim.log(`the graph paused on interrupt(): ${JSON.stringify(pending.map((interrupt) => interrupt.value))}`);
  await invokeRecorded(sim, graph, threadId, new Command({ resume: 'approve' }), first.runId);
  return ['COMPLETED', 'INTERRUPTED', 'COMPLETED', 'COMPLETED'];
}

async function largeOutput(sim: LangGraphSimulator): Promise<AuditStatus[]> {
  const question = 'Dump the access log.';
  const threadId = await sim.newThread('langgraph: large output', question);
  const read = callTool('read_log', { file: 'access.log' });
  const graph = buildReactAgent([turn('Reading the log.', [read]), turn(`The log has ${LARGE_LOG_LINES} lines.`)], { modelSleepMs: sim.stepMs });
  await invokeRecorded(sim, graph, threadId, ask(question));
  return ['COMPLETED', 'COMPLETED', 'COMPLETED'];
}

export const LANGGRAPH_SCENARIOS = {
  'langgraph-parallel': parallel,
  'langgraph-tool-errors': toolErrors,
  'langgraph-interrupt-resume': interruptResume,
  'langgraph-large-output': largeOutput,
} satisfies Record<string, (sim: LangGraphSimulator) => Promise<AuditStatus[]>>;
