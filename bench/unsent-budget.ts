// One principal that keeps 500 SSE streams open and reads none of them while 1 MB changes are
// written to their thread, and a quiet principal writing small changes and following its own
// thread over SSE (docs/subscriptions.md, "A subscriber that falls behind"). Prints the quiet
// principal's write latencies and failures, how late its stream's events came, the server's CPU
// and memory, and how many of the noisy streams the server ended.
//
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/<db> npx tsx bench/unsent-budget.ts
//
// MAX_UNSENT_BYTES_PER_PRINCIPAL (default here: 67108864, 64 MiB; the server's own default is no
// budget) is passed to the server; set it to 9007199254740991 to see the server without a budget. STREAMS (500) and BIG_WRITES (30) size it.
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { setTimeout as pause } from 'node:timers/promises';
import { mintToken } from '../src/auth/jwt.js';
import { GraphQLHttp } from './lib/graphql-http.js';
import { startServer } from './lib/server-process.js';
import { round } from './lib/stats.js';

const SECRET = 'bench-secret-that-is-long-enough-for-hs256';
const STREAMS = Number(process.env.STREAMS ?? 500);
const BIG_WRITES = Number(process.env.BIG_WRITES ?? 30);
const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) throw new Error('DATABASE_URL is not set');

const server = await startServer({
  DATABASE_URL: databaseUrl,
  AUTH_JWT_SECRET: SECRET,
  LOG_LEVEL: 'warn',
  MAX_UNSENT_BYTES_PER_PRINCIPAL: process.env.MAX_UNSENT_BYTES_PER_PRINCIPAL ?? String(64 * 1024 * 1024),
});
const gql = new GraphQLHttp(server.url);
const quietGql = new GraphQLHttp(server.url);

async function must(client: GraphQLHttp, query: string, variables: Record<string, unknown>, token: string) {
  const result = await client.post(query, variables, token);
  if (result.errors?.length || !result.data) throw new Error(JSON.stringify(result.errors));
  return result.data.result;
}

/** A thread owned by a fresh superadmin, with a run claimed by a fresh worker that declared `tools` tool calls. */
async function tenant(name: string, tools: number) {
  const stamp = `${name}-${Date.now()}`;
  const owner = await mintToken(SECRET, { sub: `owner-${stamp}`, role: 'superadmin' });
  const worker = await mintToken(SECRET, { sub: `worker-${stamp}`, role: 'worker' });
  const threadId = (await must(gql, `mutation { result: createThread(input: { title: "bench" }) { id } }`, {}, owner)).id as string;
  const runId = (await must(gql, `mutation($t: ID!) { result: createRun(input: { threadId: $t }) { id } }`, { t: threadId }, owner)).id as string;
  const lease = await must(gql, `mutation($r: ID!) { result: claimRun(input: { runId: $r, leaseSeconds: 600 }) { runId epoch } }`, { r: runId }, worker);
  let sequence = 1;
  const observed = (input: Record<string, unknown>) => ({ lease, observedAt: new Date().toISOString(), sequence: String(sequence++), ...input });
  const MODEL_STARTED = `mutation($input: ModelStartedInput!) { result: recordModelStarted(input: $input) { id } }`;
  const MODEL_FINISHED = `mutation($input: ModelFinishedInput!) { result: recordModelFinished(input: $input) { id } }`;
  await must(gql, MODEL_STARTED, { input: observed({ operationId: 'm1' }) }, worker);
  const calls = Array.from({ length: tools }, (_, i) => ({ id: `c${i}`, name: 'read_file' }));
  await must(gql, MODEL_FINISHED, { input: observed({ operationId: 'm1', status: 'COMPLETED', toolCalls: calls }) }, worker);
  let next = 0;
  const TOOL_STARTED = `mutation($input: ToolStartedInput!) { result: recordToolStarted(input: $input) { id } }`;
  return {
    owner,
    threadId,
    /** Starts the next declared tool with `effectiveInput`; the GraphQL result, errors included. */
    toolStarted: (client: GraphQLHttp, effectiveInput: unknown) =>
      client.post(TOOL_STARTED, { input: observed({ toolCallId: `c${next++}`, name: 'read_file', effectiveInput }) }, worker),
  };
}

const CHANGES = `subscription($t: ID!) { threadChanges(threadId: $t) { cursor audit { id status ... on ToolAudit { effectiveInput } } } }`;

/** An SSE subscription on its own connection; `read: false` leaves its response unread. */
function sse(token: string, threadId: string, read: boolean, onEvent: (at: number) => void = () => {}) {
  const state = { ended: false, slowConsumer: false };
  const request = http.request(server.url, {
    method: 'POST',
    agent: false,
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: `Bearer ${token}` },
  });
  request.on('response', (response) => {
    response.on('end', () => (state.ended = true));
    response.on('error', () => (state.ended = true));
    response.socket.on('close', () => (state.ended = true));
    if (!read) return void response.pause();
    let buffered = '';
    response.setEncoding('utf8');
    response.on('data', (chunk: string) => {
      buffered += chunk;
      let boundary: number;
      while ((boundary = buffered.indexOf('\n\n')) >= 0) {
        const block = buffered.slice(0, boundary);
        buffered = buffered.slice(boundary + 2);
        if (block.includes('event: next')) onEvent(performance.now());
        if (block.startsWith(': slow consumer')) state.slowConsumer = true;
      }
    });
  });
  request.on('error', () => (state.ended = true));
  request.end(JSON.stringify({ query: CHANGES, variables: { t: threadId } }));
  return { state, close: () => request.destroy() };
}

/** Memory the kernel holds for TCP sockets, all of this machine's (Linux: /proc/net/sockstat, pages of 4 KiB). */
const tcpMemMiB = () => (Number(/TCP:.* mem (\d+)/.exec(readFileSync('/proc/net/sockstat', 'utf8'))?.[1] ?? NaN) * 4096) / 2 ** 20;

/** Nearest-rank percentile. */
function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length ? sorted[Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length))) - 1]! : NaN;
}

async function scrape(): Promise<Map<string, number>> {
  const text = await (await fetch(server.url.replace('/graphql', '/metrics'))).text();
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    const match = /^(agent_audit_[a-z_]+(?:\{[^}]*\})?) (\S+)$/.exec(line);
    if (match) samples.set(match[1]!, Number(match[2]));
  }
  return samples;
}

try {
  const noisy = await tenant('noisy', BIG_WRITES);
  const quiet = await tenant('quiet', 1000);

  const receipts: number[] = [];
  const quietStream = sse(quiet.owner, quiet.threadId, true, (at) => receipts.push(at));
  const streams = Array.from({ length: STREAMS }, () => sse(noisy.owner, noisy.threadId, false));
  for (;;) {
    const open = (await scrape()).get('agent_audit_open_subscriptions{transport="sse"}') ?? 0;
    if (open >= STREAMS + 1) break;
    await pause(200);
  }

  const before = await server.counts();
  let peakRss = before.rssBytes;
  const tcpBefore = tcpMemMiB();
  let peakTcp = tcpBefore;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      peakRss = Math.max(peakRss, (await server.counts()).rssBytes);
      peakTcp = Math.max(peakTcp, tcpMemMiB());
      await pause(250);
    }
  })();

  const payload = { content: 'x'.repeat(1_000_000) };
  let noisyDone = false;
  const noisyWriter = (async () => {
    for (let i = 0; i < BIG_WRITES; i++) await noisy.toolStarted(gql, payload);
    noisyDone = true;
  })();
  const latencies: number[] = [];
  const written: number[] = [];
  let failures = 0;
  const failureCodes = new Map<string, number>();
  let after: number | null = null;
  // The quiet worker declared 1000 tool calls: one write each.
  while ((after === null || performance.now() < after) && latencies.length + failures < 1000) {
    if (noisyDone && after === null) after = performance.now() + 2000;
    const started = performance.now();
    let result;
    try {
      result = await quiet.toolStarted(quietGql, { n: written.length });
    } catch (error) {
      result = { errors: [{ message: String(error), extensions: { code: 'TRANSPORT' } }] };
    }
    const done = performance.now();
    if (result.errors?.length) {
      failures++;
      const code = String(result.errors[0]!.extensions?.code ?? 'UNKNOWN');
      failureCodes.set(code, (failureCodes.get(code) ?? 0) + 1);
      continue;
    }
    latencies.push(done - started);
    written.push(done);
  }
  await noisyWriter;
  await pause(3000); // the quiet stream's last events
  sampling = false;
  await sampler;
  const end = await server.counts();
  const metrics = await scrape();
  // Past the 30 s in which a stream ended as a slow consumer may still flush what it held.
  await pause(35_000);
  const tcpAfter = tcpMemMiB();

  const lateness = written.slice(0, receipts.length).map((at, i) => Math.max(0, receipts[i]! - at));
  console.log(
    JSON.stringify(
      {
        budget: process.env.MAX_UNSENT_BYTES_PER_PRINCIPAL ?? String(64 * 1024 * 1024),
        noisyStreams: STREAMS,
        bigWrites: BIG_WRITES,
        quietWrites: { count: latencies.length, p50Ms: round(percentile(latencies, 50)), p95Ms: round(percentile(latencies, 95)), maxMs: round(percentile(latencies, 100)), failures, failureCodes: Object.fromEntries(failureCodes) },
        quietStream: { events: receipts.length, of: written.length, latenessP95Ms: round(percentile(lateness, 95)), latenessMaxMs: round(percentile(lateness, 100)) },
        server: {
          cpuUserS: round((end.cpu.user - before.cpu.user) / 1e6),
          cpuSystemS: round((end.cpu.system - before.cpu.system) / 1e6),
          peakRssMiB: round(peakRss / 2 ** 20),
          loopDelayMaxMs: end.loopDelayMaxMs,
        },
        kernelTcpMemMiB: { before: round(tcpBefore), peak: round(peakTcp), '35 s after the writes': round(tcpAfter) },
        noisyEndedByServer: metrics.get('agent_audit_slow_consumer_closes_total{transport="sse",bound="principal"}') ?? 0,
        unsentBytesLargestPrincipal: metrics.get('agent_audit_unsent_bytes_largest_principal'),
      },
      null,
      2,
    ),
  );
  quietStream.close();
  for (const stream of streams) stream.close();
} finally {
  await server.stop();
}
