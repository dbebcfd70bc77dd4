// npx tsx bench/npm-start-memory.ts <checkout> [--port 4000] [--script start]
//
// `npm start` as a new user's first start, npm's own processes included (issue 45: the first
// start's peak, install step included): the resident size of its whole process tree, summed
// every 20 ms until the server answers; the peak, the processes at the peak, and the peaks before
// and while the server ran, and the tree 5 s after the server answered. <checkout> is a scratch clone whose dependencies are already downloaded:
//   git clone . /tmp/fresh && cp -a node_modules /tmp/fresh/
// a copy, not hard links (`cp -al`): npm install rewrites files of node_modules in place. Before
// each run this removes what a first start makes (the install stamp, the install's template,
// .data), so npm install runs (nothing to download), then its postinstall steps, then the server.
// `--script serve`: `npm run serve` instead, the server without the install's template (as with
// install scripts skipped). Linux only (/proc).
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { commandLine, memory, processTree } from './lib/process-tree.js';

const { values: flags, positionals } = parseArgs({ options: { port: { type: 'string', default: '4000' }, script: { type: 'string', default: 'start' } }, allowPositionals: true });
const checkout = resolve(positionals[0] ?? '');
if (!positionals[0]) throw new Error('usage: npx tsx bench/npm-start-memory.ts <checkout> [--port 4000] [--script start]');
for (const made of ['node_modules/.audit-server-install.json', 'node_modules/.cache/agent-audit-server', '.data']) {
  rmSync(join(checkout, made), { recursive: true, force: true });
}

interface Sample {
  total: number;
  processes: { rss: number; command: string }[];
}

function sample(root: number): Sample {
  const processes = processTree(root).flatMap((pid) => {
    try {
      return [{ rss: memory(pid).rss, command: commandLine(pid) }];
    } catch {
      return []; // exited between the listing and the read
    }
  });
  return { total: processes.reduce((sum, process) => sum + process.rss, 0), processes };
}

const npm = spawn('npm', ['run', flags.script], {
  cwd: checkout,
  detached: true, // its own process group, ended as a whole
  stdio: ['ignore', 'pipe', 'pipe'],
  env: { ...process.env, PORT: flags.port, DATA_DIR: join(checkout, '.data'), DATABASE_URL: '', REDIS_URL: '', AUTH_JWT_SECRET: '' },
});
let output = '';
npm.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
npm.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
const started = Date.now();
let peak: Sample & { seconds: number } = { total: 0, processes: [], seconds: 0 };
let serverPeak: Sample = { total: 0, processes: [] };
let installPeak: Sample = { total: 0, processes: [] };
const ended = await new Promise<string>((resolveEnd) => {
  const timer = setInterval(() => {
    const now = sample(npm.pid!);
    if (now.total > peak.total) peak = { ...now, seconds: (Date.now() - started) / 1000 };
    const serverRuns = now.processes.some((process) => process.command.includes('src/main.ts'));
    if (serverRuns && now.total > serverPeak.total) serverPeak = now;
    if (!serverRuns && now.total > installPeak.total) installPeak = now;
    if (/listening on/.test(output)) {
      clearInterval(timer);
      resolveEnd('the server answers');
    }
  }, 20);
  npm.once('exit', (code) => {
    clearInterval(timer);
    resolveEnd(`npm run ${flags.script} exited (${code}):\n${output.slice(-3000)}`);
  });
});
// The tree once the start is over: the database's creation has exited, the server waits for requests.
await new Promise((resolveSettled) => setTimeout(resolveSettled, 5000));
const settled = sample(npm.pid!);
try {
  process.kill(-npm.pid!, 'SIGKILL');
} catch {
  // Already gone.
}

const list = (processes: Sample['processes']) => processes.map(({ rss, command }) => `  ${String(rss).padStart(4)} MB  ${command.slice(0, 100)}`).join('\n');
console.log(`${ended} after ${((Date.now() - started) / 1000).toFixed(1)} s`);
console.log(`npm run ${flags.script}'s process tree: peak ${peak.total} MB at ${peak.seconds.toFixed(1)} s:\n${list(peak.processes)}`);
console.log(`before the server (the install steps): peak ${installPeak.total} MB:\n${list(installPeak.processes)}`);
console.log(`while the server ran: peak ${serverPeak.total} MB:\n${list(serverPeak.processes)}`);
console.log(`5 s after it answered: ${settled.total} MB:\n${list(settled.processes)}`);
