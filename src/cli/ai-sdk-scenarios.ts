// `npm run simulate -- --ai-sdk`: runs like the hand-written scenarios, made by a Vercel AI SDK
// agent (src/cli/ai-sdk-agent.ts: the SDK's mock model following a script, real tools) and
// recorded by the client's AI SDK adapter.
import type { AuditClient, AuditStatus } from '@agent-audit/client';
import { AiSdkAudit } from '@agent-audit/client/ai-sdk';
import { stepCountIs } from 'ai';
import { LARGE_LOG_LINES, agentTools, callTool, scriptedModel, turn, type ScriptedTurn } from './ai-sdk-agent.js';

export interface AiSdkSimulator {
  owner: AuditClient;
  worker: AuditClient;
  log: (line: string) => void;
  stepMs: number;
  runIds: string[];
  /** The thread to run in (created with the user's message when the simulator has none). */
  newThread: (title: string, userText: string) => Promise<string>;
}

const LEASE_SECONDS = 15;

/** One recorded agent call in a fresh run of the thread, with generateText or streamText. */
async function runRecorded(sim: AiSdkSimulator, threadId: string, turns: ScriptedTurn[], prompt: string, mode: 'generate' | 'stream') {
  const run = await sim.owner.createRun({ threadId });
  sim.runIds.push(run.id);
  sim.log(`run ${run.id} created; ${mode === 'generate' ? 'generateText' : 'streamText'} runs with the audit adapter`);
  const audit = new AiSdkAudit(sim.worker, {
    leaseSeconds: LEASE_SECONDS,
    onWriteError: (error) => sim.log(`audit write refused: ${error instanceof Error ? error.message : String(error)}`),
  });
  const options = { model: scriptedModel(turns, { stepMs: sim.stepMs }), tools: agentTools, prompt, stopWhen: stepCountIs(turns.length) };
  let finished;
  if (mode === 'generate') {
    finished = await audit.generateText(run.id, options);
    sim.log(`the agent answered: ${finished.result.text.slice(0, 80)}`);
  } else {
    const streaming = await audit.streamText(run.id, options);
    let text = '';
    for await (const delta of streaming.result.textStream) text += delta;
    finished = await streaming.finished;
    sim.log(`the agent streamed: ${text.slice(0, 80)}`);
  }
  sim.log(`run ${run.id} finished by the adapter: ${finished.status}`);
  if (finished.writeErrors.length > 0) throw new Error(`${finished.writeErrors.length} audit writes were refused`);
}

async function parallel(sim: AiSdkSimulator): Promise<AuditStatus[]> {
  const question = 'What is the weather in Paris and in Oslo?';
  const threadId = await sim.newThread('ai-sdk: parallel tools', question);
  const calls = [callTool('get_weather', { city: 'Paris' }), callTool('get_weather', { city: 'Oslo', units: 'imperial' })];
  await runRecorded(sim, threadId, [turn('Checking both cities at once.', calls), turn('Sunny in both.')], question, 'generate');
  return ['COMPLETED', 'COMPLETED', 'COMPLETED', 'COMPLETED'];
}

async function streamedSteps(sim: AiSdkSimulator): Promise<AuditStatus[]> {
  const question = 'Weather in Rome, then in Lima?';
  const threadId = await sim.newThread('ai-sdk: streamed steps', question);
  const turns = [
    turn('Rome first.', [callTool('get_weather', { city: 'Rome' })]),
    turn('Now Lima.', [callTool('get_weather', { city: 'Lima' })]),
    turn('Sunny in Rome and in Lima.'),
  ];
  await runRecorded(sim, threadId, turns, question, 'stream');
  return ['COMPLETED', 'COMPLETED', 'COMPLETED', 'COMPLETED', 'COMPLETED'];
}

async function toolError(sim: AiSdkSimulator): Promise<AuditStatus[]> {
  const question = 'Email me the report.';
  const threadId = await sim.newThread('ai-sdk: a tool that throws', question);
  const turns = [turn('Sending it.', [callTool('send_email', { to: 'me@example.com' })]), turn('The email could not be sent.')];
  await runRecorded(sim, threadId, turns, question, 'generate');
  return ['COMPLETED', 'FAILED', 'COMPLETED'];
}

async function largeOutput(sim: AiSdkSimulator): Promise<AuditStatus[]> {
  const question = 'Dump the access log.';
  const threadId = await sim.newThread('ai-sdk: large output', question);
  const turns = [turn('Reading the log.', [callTool('read_log', { file: 'access.log' })]), turn(`The log has ${LARGE_LOG_LINES} lines.`)];
  await runRecorded(sim, threadId, turns, question, 'stream');
  return ['COMPLETED', 'COMPLETED', 'COMPLETED'];
}

export const AI_SDK_SCENARIOS = {
  'ai-sdk-parallel': parallel,
  'ai-sdk-streamed-steps': streamedSteps,
  'ai-sdk-tool-error': toolError,
  'ai-sdk-large-output': largeOutput,
} satisfies Record<string, (sim: AiSdkSimulator) => Promise<AuditStatus[]>>;
