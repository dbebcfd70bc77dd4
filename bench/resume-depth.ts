// npx tsx bench/resume-depth.ts [--depths 1,50,500] [--calls 20]
//   DATABASE_URL=<admin URL> for PostgreSQL (a scratch database, dropped afterwards), else PGlite
//
// A long-lived agent: one conversation resumed again and again (each run resumes the one before),
// so its runs form a chain hundreds deep, and a call declared at the chain's root may be started
// by the run at its tip. For each depth, a thread whose first run declared --calls × 2 calls, then
// `depth` resumes, the last one running and declaring --calls calls of its own; then, depth by
// depth in one run (twice, the first round a warm-up), each read's p50 over HTTP:
// - a tool start bound to the root's declaration (the binding walks up the whole chain),
// - a tool start bound to the tip's own declaration,
// - a tool start no run declared (MODEL_NOT_FOUND, the whole chain walked),
// - toolCallLedger(threadId, first: 50) and threadAudits(limit: 500), as the page reads them;
// then, once, the owner's createRun of one more resume (the tip finished INTERRUPTED first,
// untimed; the new run claimed after, untimed), a few times: the database records the new run's
// resume ancestors, one walk up the chain (migration 20261216000000_resume_ancestors).
// Reported as ratios to depth 1 (the chains are built through the API first, outside the timings).
import { parseArgs } from 'node:util';
import { mintToken } from '../src/auth/jwt.js';
import { benchServer } from './lib/bench-server.js';
import type { GraphQLHttp } from './lib/graphql-http.js';
import { round, summarize, table } from './lib/stats.js';

const { values: flags } = parseArgs({ options: { depths: { type: 'string', default: '1,50,500' }, calls: { type: 'string', default: '20' } } });
const depths = flags.depths.split(',').map(Number);
const calls = Number(flags.calls);

const bench = await benchServer();
const { http } = bench;
const owner = await mintToken(bench.secret, { sub: 'resume-owner', role: 'superadmin' });
const worker = await mintToken(bench.secret, { sub: 'resume-worker', role: 'worker' });

interface Lease {
  runId: string;
  epoch: number;
}
let sequence = 0;
const observed = (lease: Lease) => ({ lease, observedAt: new Date().toISOString(), sequence: String(++sequence) });

async function claim(h: GraphQLHttp, runId: string): Promise<Lease> {
  const { claimRun } = await h.must(`mutation($i: ClaimRunInput!) { claimRun(input: $i) { runId epoch } }`, { i: { runId, leaseSeconds: 3600 } }, worker);
  return claimRun;
}
async function createRun(h: GraphQLHttp, threadId: string, resumeFromRunId?: string): Promise<string> {
  return (await h.must(`mutation($i: CreateRunInput!) { createRun(input: $i) { id } }`, { i: { threadId, resumeFromRunId } }, owner)).createRun.id;
}
async function declare(h: GraphQLHttp, lease: Lease, operationId: string, ids: string[]) {
  await h.must(`mutation($i: ModelStartedInput!) { recordModelStarted(input: $i) { id } }`, { i: { ...observed(lease), operationId } }, worker);
  const toolCalls = ids.map((id) => ({ id, name: 'search', args: { q: id } }));
  await h.must(`mutation($i: ModelFinishedInput!) { recordModelFinished(input: $i) { id } }`, { i: { ...observed(lease), operationId, status: 'COMPLETED', toolCalls } }, worker);
}
const START = `mutation($i: ToolStartedInput!) { recordToolStarted(input: $i) { id } }`;
const start = (lease: Lease, toolCallId: string) => http.post(START, { i: { ...observed(lease), toolCallId, name: 'search', effectiveInput: { q: toolCallId } } }, worker);

async function chain(depth: number) {
  const { createThread } = await http.must(`mutation { createThread(input: { title: "resume depth" }) { id } }`, {}, owner);
  const threadId: string = createThread.id;
  let lease = await claim(http, await createRun(http, threadId));
  await declare(http, lease, 'root', Array.from({ length: calls * 2 }, (_, i) => `root-${i}`));
  for (let i = 0; i < depth; i++) {
    await http.must(`mutation($i: FinishRunInput!) { finishRun(input: $i) { id } }`, { i: { lease, status: 'INTERRUPTED' } }, worker);
    lease = await claim(http, await createRun(http, threadId, lease.runId));
  }
  await declare(http, lease, 'tip', Array.from({ length: calls }, (_, i) => `tip-${i}`));
  return { threadId, lease };
}

async function timed(fn: () => Promise<{ errors?: { extensions?: { code?: string } }[] }>, code?: string) {
  const started = performance.now();
  const result = await fn();
  const ms = performance.now() - started;
  const got = result.errors?.[0]?.extensions?.code;
  if (got !== code) throw new Error(`expected ${code ?? 'success'}, got ${JSON.stringify(result.errors)}`);
  return ms;
}

const LEDGER = `query($t: ID!) { toolCallLedger(threadId: $t, first: 50) { edges { node { toolCallId status cases } } } }`;
const AUDITS = `query($t: ID!) { threadAudits(threadId: $t, limit: 500) { truncated items { __typename id status ... on ToolAudit { toolCallId declaredBy { id runId } toolCall { status } } } } }`;

try {
  const chains = new Map<number, Awaited<ReturnType<typeof chain>>>();
  for (const depth of depths) {
    const began = performance.now();
    chains.set(depth, await chain(depth));
    console.log(`depth ${depth}: built in ${Math.round(performance.now() - began)} ms`);
  }
  const results = new Map<number, Record<string, number>>();
  for (const round_ of [0, 1]) {
    for (const depth of depths) {
      const { threadId, lease } = chains.get(depth)!;
      const times: Record<string, number[]> = { 'start, root-declared': [], 'start, tip-declared': [], MODEL_NOT_FOUND: [], ledger: [], threadAudits: [] };
      for (let i = 0; i < calls / 2; i++) {
        const n = round_ * (calls / 2) + i;
        times['start, root-declared']!.push(await timed(() => start(lease, `root-${n}`)));
        times['start, tip-declared']!.push(await timed(() => start(lease, `tip-${n}`)));
        times.MODEL_NOT_FOUND!.push(await timed(() => start(lease, `nobody-${n}`), 'MODEL_NOT_FOUND'));
        times.ledger!.push(await timed(() => http.post(LEDGER, { t: threadId }, owner)));
        times.threadAudits!.push(await timed(() => http.post(AUDITS, { t: threadId }, owner)));
      }
      results.set(depth, Object.fromEntries(Object.entries(times).map(([name, values]) => [name, summarize(values).p50])));
    }
  }
  for (const depth of depths) {
    const chained = chains.get(depth)!;
    const creations: number[] = [];
    for (let i = 0; i < 5; i++) {
      await http.must(`mutation($i: FinishRunInput!) { finishRun(input: $i) { id } }`, { i: { lease: chained.lease, status: 'INTERRUPTED' } }, worker);
      const began = performance.now();
      const runId = await createRun(http, chained.threadId, chained.lease.runId);
      creations.push(performance.now() - began);
      chained.lease = await claim(http, runId);
    }
    results.get(depth)!['createRun (a resume)'] = summarize(creations).p50;
  }
  const names = Object.keys(results.get(depths[0]!)!);
  const base = results.get(depths[0]!)!;
  console.log(
    table(
      ['depth', ...names.map((name) => `${name} p50 ms (× depth ${depths[0]})`)],
      depths.map((depth) => [depth, ...names.map((name) => `${round(results.get(depth)![name]!)} (${round(results.get(depth)![name]! / base[name]!)}×)`)]),
    ),
  );
} finally {
  await bench.close();
}
