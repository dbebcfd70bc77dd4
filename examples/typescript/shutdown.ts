// A worker its platform stops: Kubernetes sends SIGTERM, then SIGKILL after the grace period (a
// user's Ctrl-C is SIGINT). On either it stops the tool in progress, hands the run back
// INTERRUPTED (the tool's call PENDING again, for a resume) within a bound, and exits; a process
// frozen past its lease and thawed (a paused container, a laptop asleep) finds the run gone and
// exits without retrying.
//
//   AUDIT_OWNER_TOKEN=<superadmin> AUDIT_WORKER_TOKEN=<worker> npx tsx examples/typescript/shutdown.ts
//
// Once its tool runs it prints `{"working":true,"pid":…,"threadId":…,"runId":…}` (the pid to signal), then waits. AUDIT_URL defaults to
// http://127.0.0.1:4000/graphql; AUDIT_SHUTDOWN_MS (default 5000) bounds the hand-back and
// AUDIT_LEASE_SECONDS (default 30) is the lease asked for.
import { AuditClient, LeaseKeeper, RunInterruption, SequenceCounter, isAuditApiError } from '@agent-audit/client';

for (const [name, role] of Object.entries({ AUDIT_OWNER_TOKEN: 'superadmin', AUDIT_WORKER_TOKEN: 'worker' })) {
  if (process.env[name]) continue;
  console.error(`${name} is not set: give it a ${role} token (\`npm start\` prints one on its first start; \`npm run -s token -- --sub me --role ${role}\` mints more)`);
  process.exit(1);
}
const url = process.env.AUDIT_URL ?? 'http://127.0.0.1:4000/graphql';
const owner = new AuditClient({ url, token: process.env.AUDIT_OWNER_TOKEN! });
const worker = new AuditClient({ url, token: process.env.AUDIT_WORKER_TOKEN! });
const shutdownMs = Number(process.env.AUDIT_SHUTDOWN_MS ?? 5_000);
const leaseSeconds = Number(process.env.AUDIT_LEASE_SECONDS ?? 30);

const { id: threadId } = await owner.createThread({ title: 'shutdown example' });
const { id: runId } = await owner.createRun({ threadId });

/** A tool that takes an hour (a long download, a build), unless its signal aborts first. */
const longJob = (signal: AbortSignal) =>
  new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => resolve('done'), 3_600_000);
    signal.addEventListener('abort', () => (clearTimeout(timer), reject(signal.reason)), { once: true });
  });

// #region worker
// The platform's stop aborts `stop` with a RunInterruption: a hand-over, not a failure.
const stop = new AbortController();
for (const name of ['SIGTERM', 'SIGINT'] as const) process.once(name, () => stop.abort(new RunInterruption(name)));

const keeper = new LeaseKeeper(worker, await worker.claimRun(runId, leaseSeconds), { leaseSeconds });
// The work stops on either: the platform's stop, or the lease gone (cancelled, or expired while frozen).
const work = AbortSignal.any([stop.signal, keeper.signal]);
const sequence = new SequenceCounter(1);
const lease = () => keeper.lease;
try {
  await worker.recordModelStarted({ lease: lease(), operationId: 'model-1', sequence: sequence.next(), model: 'example-model', input: {} });
  const toolCalls = [{ id: 'call-1', name: 'long_job', args: {} }];
  await worker.recordModelFinished({ lease: lease(), operationId: 'model-1', status: 'COMPLETED', output: { tool_calls: toolCalls }, toolCalls, sequence: sequence.next() });
  await worker.recordToolStarted({ lease: lease(), toolCallId: 'call-1', name: 'long_job', effectiveInput: {}, sequence: sequence.next() });
  console.log(JSON.stringify({ working: true, pid: process.pid, threadId, runId }));
  await longJob(work);
} catch (error) {
  keeper.stop();
  if (keeper.signal.aborted) {
    // The run is no longer this worker's (LEASE_LOST or LEASE_EXPIRED: cancelled, or swept while
    // frozen): nothing more is sent, since every write would be refused alike.
    const gone: unknown = keeper.signal.reason;
    console.error(`run ${runId}: the lease is gone (${isAuditApiError(gone) ? `${gone.code}: ${gone.message}` : String(gone)}); stopping`);
    process.exitCode = 1;
  } else if (stop.signal.aborted) {
    // Hand the run back within the bound: INTERRUPTED, its running tool INTERRUPTED and its call
    // PENDING for a resume. Past the bound (the server out of reach) the calls are given up and the
    // process exits before SIGKILL; the lease's expiry then ends the run FAILED (LEASE_EXPIRED).
    const bound = AbortSignal.timeout(shutdownMs);
    try {
      await worker.finishRun({ lease: lease(), status: 'INTERRUPTED', error: { message: String(stop.signal.reason) } }, { signal: bound });
      console.error(`run ${runId}: handed back INTERRUPTED`);
    } catch (notHandedBack) {
      console.error(`run ${runId}: not handed back (${String(notHandedBack)}); its lease's expiry will end it`);
    }
    await worker.close({ signal: bound }).catch(() => undefined);
  } else {
    throw error;
  }
}
// #endregion worker
