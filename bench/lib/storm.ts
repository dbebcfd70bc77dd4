// The resume storm (issue 20): N threadChanges subscribers drop their connections together and
// resume with the last cursor each received, while a worker keeps writing. Measured: the time
// from the drop until every subscriber has received a change written after it (catch-up delivers
// in cursor order, so by then it has caught up), and, once the writes stop, whether every
// subscriber's applied view equals the thread's committed state (nothing lost) and no cursor came twice.
import { spawn } from 'node:child_process';
import { setTimeout as pause } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { GraphQLHttp } from './graphql-http.js';
import { ipcClient } from './ipc.js';
import { runScript } from './run-script.js';
import type { ServerProcess } from './server-process.js';
import { serverChangeCursor, serverCreateRun, serverStep, type Lease } from './server-worker.js';
import { round } from './stats.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SUBSCRIBERS = fileURLToPath(new URL('./fanout-subscribers.ts', import.meta.url));
/** The writer's pause between mutations: changes keep coming, and the thread stays within one threadAudits page. */
const WRITE_PAUSE_MS = 25;

const STATE = /* GraphQL */ `
  query StormState($threadId: ID!) {
    threadAudits(threadId: $threadId, limit: 500) { truncated items { id status } }
  }`;

export interface StormResult {
  subscribers: number;
  /** From the drop until every subscriber is subscribed again, ms. */
  resubscribeMs: number;
  /** From the drop until every subscriber has received a change written after the drop, ms. */
  liveAgainMs: number | null;
  liveAgain: number;
  /** Changes committed by the writer during the whole storm (runs × 11). */
  changesWritten: number;
  views: { entities: number; missing: number; differing: number; subscribersOff: number; repeatedCursors: number };
  errors: number;
  firstError?: string;
}

export async function measureStorm(options: {
  /** The server the subscribers connect to (the writes go through `http`, maybe another instance). */
  server: ServerProcess;
  http: GraphQLHttp;
  ownerToken: string;
  workerToken: string;
  threadId: string;
  subscribers: number;
  log: (line: string) => void;
}): Promise<StormResult> {
  const { server, http, ownerToken, workerToken, threadId, subscribers, log } = options;
  const fleet = spawn(process.execPath, ['--import', 'tsx', SUBSCRIBERS], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const ask = ipcClient(fleet);
  // Every subscriber starts after the thread's cursor before any write, so its view can be whole.
  const after = await serverChangeCursor(http, ownerToken, threadId);
  let prefix = 'storm-before-';
  let writing = true;
  let runs = 0;
  const finishedRuns: string[] = [];
  let writeError: unknown = null;
  // One worker writing whole runs, one mutation at a time, for the whole storm.
  const writer = (async () => {
    while (writing) {
      const runId = await serverCreateRun(http, ownerToken, threadId);
      let lease: Lease | null = null;
      for (const step of runScript(2, `${prefix}${runs}`)) {
        await pause(WRITE_PAUSE_MS);
        lease = await serverStep(http, workerToken, runId, lease, step);
      }
      finishedRuns.push(runId);
      runs++;
    }
  })().catch((error: unknown) => {
    writeError = error;
    writing = false;
  });
  try {
    const { connected } = await ask<{ connected: number }>({
      command: 'start', transport: 'ws', url: server.wsUrl, token: ownerToken, threadId, subscribers, measuredPrefix: 'storm-', stream: 'threadChanges', after,
    });
    if (connected < subscribers) throw new Error(`only ${connected} of ${subscribers} subscribers connected`);
    for (let waited = 0; (await ask<{ minTotal: number }>({ command: 'progress' })).minTotal < 2; waited++) {
      if (waited > 300) throw new Error('some subscribers never received a change before the storm');
      await pause(100);
    }
    log(`    ${subscribers} subscribers live; dropping them all while the writes go on`);
    prefix = 'storm-after-';
    const dropped = await ask<{ droppedAt: number; resubscribedAt: number; resubscribed: number }>({
      command: 'drop-and-resume', url: server.wsUrl, token: ownerToken, threadId, afterDropPrefix: 'storm-after-',
    });
    let progress = await ask<{ liveAgain: number; lastLiveAgainAt: number | null; errors: number; firstError?: string }>({ command: 'storm-progress' });
    const deadline = Date.now() + 60_000;
    while (progress.liveAgain < subscribers && Date.now() < deadline) {
      await pause(100);
      progress = await ask({ command: 'storm-progress' });
    }
    // A few more runs after everyone is back, then quiet, so every view can be compared with the database.
    const runsAtRecovery = runs;
    while (writing && runs < runsAtRecovery + 3) await pause(50);
    writing = false;
    await writer;
    if (writeError) throw writeError;
    const state = await http.must(STATE, { threadId }, ownerToken);
    if (state.threadAudits.truncated) throw new Error('the storm thread outgrew one threadAudits page; compare fewer changes');
    const expected: Record<string, string> = {};
    for (const item of state.threadAudits.items) expected[item.id] = item.status;
    for (const runId of finishedRuns) expected[runId] = 'COMPLETED';
    // Until every view matches, or nothing changes for 10 s.
    let views = await ask<StormResult['views']>({ command: 'compare-views', expected });
    for (let quiet = 0; (views.missing || views.differing) && quiet < 100; quiet++) {
      await pause(100);
      views = await ask({ command: 'compare-views', expected });
    }
    return {
      subscribers,
      resubscribeMs: round(dropped.resubscribedAt - dropped.droppedAt)!,
      liveAgainMs: progress.lastLiveAgainAt === null || progress.liveAgain < subscribers ? null : round(progress.lastLiveAgainAt - dropped.droppedAt),
      liveAgain: progress.liveAgain,
      changesWritten: runs * 11,
      views,
      errors: progress.errors,
      firstError: progress.firstError,
    };
  } finally {
    writing = false;
    await writer;
    await ask({ command: 'stop' }).catch(() => {});
    if (fleet.exitCode === null) fleet.kill('SIGKILL');
  }
}
