// npx tsx bench/embedded-memory.ts [--workers 8] [--seconds 20] [--node-flags "--max-semi-space-size=64"]
//   [--malloc-env "MALLOC_TRIM_THRESHOLD_=131072"] (default: the serve script's; "" for glibc's defaults)
//
// The embedded default's memory (issue 45, "a lean embedded default"): `npm run serve`'s command
// on a fresh data directory (PGlite), its resident size read from /proc: the peak of its first
// start (a new database created and migrated: by a child process, so the peak of the whole process
// tree, summed every 50 ms, beside the server's own), the resident size once it answers and has
// settled, and the peak while W workers drive whole runs through it (claim, model call, tool, model
// call, finish), with the lifecycle events per second they reached. First, the install step's
// template of a new database (scripts/pglite-template.sh, the postinstall script's last command),
// made once per install: its peak.
// Linux only (/proc).
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as pause } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { AuditClient } from '@agent-audit/client';
import { memory, processTree } from './lib/process-tree.js';
import { SERVE_MALLOC_ENV } from './lib/server-process.js';

const { values: flags } = parseArgs({
  options: {
    workers: { type: 'string', default: '8' },
    seconds: { type: 'string', default: '20' },
    // The serve script's node flags (scripts/serve.sh), so a run can compare others.
    'node-flags': { type: 'string', default: /node (.*?) --import tsx/.exec(readFileSync('scripts/serve.sh', 'utf8'))![1]! },
    // The serve script's allocator settings (scripts/serve.sh), so a run can compare others.
    'malloc-env': { type: 'string', default: Object.entries(SERVE_MALLOC_ENV).map(([name, value]) => `${name}=${value}`).join(' ') },
  },
});
const workers = Number(flags.workers);
const seconds = Number(flags.seconds);

/** Samples the summed resident size of `pid`'s process tree every 50 ms until `stop` is called: its peak, in MB. */
function sampleTree(pid: number): { stop: () => number } {
  let peak = 0;
  const sample = () => {
    const rss = processTree(pid).reduce((sum, member) => {
      try {
        return sum + memory(member).rss;
      } catch {
        return sum; // exited between the listing and the read
      }
    }, 0);
    peak = Math.max(peak, rss);
  };
  const timer = setInterval(sample, 50);
  return { stop: () => (clearInterval(timer), sample(), peak) };
}

/** The install step's template made again into a scratch directory, by its script: its peak resident size, in MB. */
async function templatePeak(): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'audit-template-'));
  try {
    const script = spawn('sh', ['scripts/pglite-template.sh', join(dir, 'template')], { stdio: ['ignore', 'ignore', 'inherit'] });
    const sampler = sampleTree(script.pid!);
    const code = await new Promise((resolve) => script.once('exit', resolve));
    if (code !== 0) throw new Error(`the template step exited with ${code}`);
    return sampler.stop();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** Whole runs, one after another, as one worker of a runtime drives them. */
async function driveRuns(owner: AuditClient, worker: AuditClient, until: number): Promise<number> {
  const { id: threadId } = await owner.createThread({ title: 'memory bench' });
  let events = 0;
  while (Date.now() < until) {
    const { id: runId } = await owner.createRun({ threadId });
    const lease = await worker.claimRun(runId, 60);
    const call = { id: `call-${runId}`, name: 'get_weather', args: { city: 'Paris' } };
    await worker.recordModelStarted({ lease, operationId: 'model-1', sequence: 1, model: 'bench-model', input: { step: 1 } });
    await worker.recordModelFinished({ lease, operationId: 'model-1', status: 'COMPLETED', output: { tool_calls: [call] }, toolCalls: [call], sequence: 2 });
    await worker.recordToolStarted({ lease, toolCallId: call.id, name: call.name, effectiveInput: call.args, sequence: 3 });
    await worker.recordToolFinished({ lease, toolCallId: call.id, output: { type: 'tool', content: 'sunny' }, sequence: 4 });
    await worker.recordModelStarted({ lease, operationId: 'model-2', sequence: 5, model: 'bench-model', input: { step: 2 } });
    await worker.recordModelFinished({ lease, operationId: 'model-2', status: 'COMPLETED', output: { content: 'done' }, toolCalls: [], sequence: 6 });
    await worker.finishRun({ lease, status: 'COMPLETED' });
    events += 8;
  }
  return events;
}

const installPeak = await templatePeak();
const dataDir = mkdtempSync(join(tmpdir(), 'audit-memory-'));
const port = await freePort();
const child = spawn(process.execPath, [...flags['node-flags'].split(' ').filter(Boolean), '--import', 'tsx', 'src/main.ts'], {
  env: {
    ...process.env,
    ...Object.fromEntries(flags['malloc-env'].split(' ').filter(Boolean).map((setting) => setting.split('=') as [string, string])),
    NODE_ENV: 'production', DATA_DIR: dataDir, PORT: String(port), DATABASE_URL: '', REDIS_URL: '', AUTH_JWT_SECRET: '' },
  stdio: ['ignore', 'pipe', 'inherit'],
});
const startSampler = sampleTree(child.pid!);
let banner = '';
child.stdout!.on('data', (chunk: Buffer) => (banner += chunk.toString()));
try {
  const started = Date.now();
  while (!/worker token: +\S+/.test(banner)) {
    if (child.exitCode !== null) throw new Error(`the server exited:\n${banner}`);
    await pause(100);
  }
  const startSeconds = (Date.now() - started) / 1000;
  const firstStartPeak = memory(child.pid!).peak;
  const firstStartTreePeak = startSampler.stop();
  await pause(5000); // settled: start-up garbage collected or not, as a user would find it
  const afterStart = memory(child.pid!).rss;

  const url = /listening on (\S+)/.exec(banner)![1]!;
  const owner = new AuditClient({ url, token: /superadmin token: (\S+)/.exec(banner)![1]! });
  const worker = new AuditClient({ url, token: /worker token: +(\S+)/.exec(banner)![1]! });
  const until = Date.now() + seconds * 1000;
  let underWrites = 0;
  const sampler = setInterval(() => (underWrites = Math.max(underWrites, memory(child.pid!).rss)), 200);
  const events = (await Promise.all(Array.from({ length: workers }, () => driveRuns(owner, worker, until)))).reduce((a, b) => a + b, 0);
  clearInterval(sampler);
  const { rss: afterWrites, peak } = memory(child.pid!);

  console.log(`node flags: ${flags['node-flags'] || '(none)'}; allocator: ${flags['malloc-env'] || "glibc's defaults"}; W=${workers}, ${seconds} s of writes`);
  console.log(`install step's template of a new database: peak resident ${installPeak} MB (its own process, once per install)`);
  console.log(`a new user's first start, install step's template then the server: peak ${Math.max(installPeak, firstStartTreePeak)} MB (the two run one after the other)`);
  console.log(`first start: ${startSeconds.toFixed(1)} s, peak resident ${firstStartTreePeak} MB (process tree, sampled every 50 ms; the server's own ${firstStartPeak} MB)`);
  console.log(`resident after start (settled 5 s): ${afterStart} MB`);
  console.log(`under writes: resident up to ${Math.max(underWrites, afterWrites)} MB (process peak ${peak} MB); ${Math.round(events / seconds)} lifecycle events/s`);
} finally {
  child.kill('SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
}
