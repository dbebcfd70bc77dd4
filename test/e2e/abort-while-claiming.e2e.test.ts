// A worker pool stops a run (its AbortController, a shutdown) while the run's claim is in flight:
// the caller is answered at once with its abort, and a claim that wins after it does not leave the
// run RUNNING, its lease renewed by a keeper no code holds: the run is handed back INTERRUPTED.
import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { AuditClient, type FetchLike } from '@agent-audit/client';
import { AiSdkAudit } from '@agent-audit/client/ai-sdk';
import { LangGraphAudit } from '@agent-audit/client/langgraph';
import { e2eActors, serverForFile } from './support/server.js';

const server = serverForFile();

/** The worker's network: a ClaimRun reaches the server (which commits it) but its answer is held until `release`. */
function holdingClaimAnswers() {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const sent: string[] = [];
  let claimsAnswered = 0;
  const fetchImpl: FetchLike = async (url, init) => {
    const operation = (JSON.parse(String(init.body)) as { operationName: string }).operationName;
    sent.push(operation);
    const response = await fetch(url, init);
    if (operation !== 'ClaimRun') return response;
    const text = await response.text();
    claimsAnswered++;
    await released;
    return new Response(text, { status: response.status, headers: response.headers });
  };
  return { fetch: fetchImpl, release, sent, claimsAnswered: () => claimsAnswered };
}

async function setUp() {
  const who = await e2eActors();
  const owner = new AuditClient({ url: server.url, token: who.owner });
  const network = holdingClaimAnswers();
  const worker = new AuditClient({ url: server.url, token: who.worker, fetch: network.fetch });
  const { id: threadId } = await owner.createThread({ title: 'abort while claiming' });
  const { id: runId } = await owner.createRun({ threadId });
  return { owner, worker, network, runId };
}

/** Starts `call`, aborts it once the server has committed its claim, and checks what the caller and the run get. */
async function abortWhileClaiming(start: (worker: AuditClient, runId: string, signal: AbortSignal) => Promise<unknown>) {
  const { owner, worker, network, runId } = await setUp();
  const controller = new AbortController();
  const stop = new Error('worker shutting down');
  let settled: unknown = 'pending';
  const call = start(worker, runId, controller.signal).then(
    () => 'resolved',
    (error: unknown) => error,
  );
  void call.then((outcome) => (settled = outcome));
  try {
    await expect.poll(() => network.claimsAnswered()).toBe(1);
    expect((await owner.run(runId))!.status).toBe('RUNNING');
    controller.abort(stop);
    // Answered with the abort while the claim's answer is still on its way.
    await expect.poll(() => settled).toBe(stop);
  } finally {
    network.release();
  }
  await call;
  // The claim that won is handed back: the run ends INTERRUPTED (resumable), and no keeper renews it.
  await expect.poll(async () => (await owner.run(runId))!.status).toBe('INTERRUPTED');
  expect(network.sent).not.toContain('RenewLease');
}

const model = () => new MockLanguageModelV3({ doGenerate: async () => { throw new Error('the model is never called'); } });

describe('aborting a run while its claim is in flight', () => {
  it('AiSdkAudit.generateText rejects with the abort and hands the run back INTERRUPTED', async () => {
    await abortWhileClaiming((worker, runId, abortSignal) => new AiSdkAudit(worker).generateText(runId, { model: model(), prompt: 'hi', abortSignal }));
  });

  it('AiSdkAudit.start(runId, { signal }) does too', async () => {
    await abortWhileClaiming((worker, runId, signal) => new AiSdkAudit(worker).start(runId, { signal }));
  });

  it('LangGraphAudit.invoke with config.signal does too', async () => {
    const graph = { invoke: async () => { throw new Error('the graph is never invoked'); } };
    await abortWhileClaiming((worker, runId, signal) => new LangGraphAudit(worker).invoke(runId, graph, {}, { signal }));
  });

  it('AuditClient.claimRun(runId, seconds, claimId, { signal }) does too', async () => {
    await abortWhileClaiming((worker, runId, signal) => worker.claimRun(runId, 30, undefined, { signal }));
  });
});
