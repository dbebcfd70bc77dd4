import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { setTimeout as pause } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { ipcClient } from './ipc.js';
import type { PoolUse } from './pool-meter.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PROBE = fileURLToPath(new URL('./server-probe.ts', import.meta.url));
/** The V8 flags `npm run serve` gives the server (scripts/serve.sh), so the bench measures that server. */
const SERVE_SCRIPT = readFileSync(`${ROOT}scripts/serve.sh`, 'utf8');
export const SERVE_FLAGS: string[] = SERVE_SCRIPT.match(/--max-[a-z-]+=\d+/g) ?? [];
/** The allocator's settings `npm run serve` gives the server (glibc reads them at start: MALLOC_TRIM_THRESHOLD_). */
export const SERVE_MALLOC_ENV: Record<string, string> = Object.fromEntries([...SERVE_SCRIPT.matchAll(/\b(MALLOC_\w+)=(\S+)/g)].map(([, name, value]) => [name!, value!]));

export interface ProbeCounts {
  statements: number;
  cpu: { user: number; system: number };
  rssBytes: number;
  /** Times the server's thread was preempted (Linux: nonvoluntary context switches); null elsewhere. */
  preemptions: number | null;
  /** The longest its event loop was late since the previous `counts` (5 ms resolution). */
  loopDelayMaxMs: number;
  /** Its PostgreSQL pool's checkouts so far (zeros on PGlite). */
  pool: PoolUse;
}

export interface TracedStatement {
  sql: string;
  ms: number;
  /** When it completed, in ms since the epoch (performance.timeOrigin + now: comparable across processes). */
  at: number;
}

export interface ServerProcess {
  url: string;
  wsUrl: string;
  pid: number;
  counts(): Promise<ProbeCounts>;
  /** Records every statement, or only COMMITs (cheap enough to leave on under heavy load). */
  traceStart(mode?: 'all' | 'commits'): Promise<void>;
  traceTake(): Promise<TracedStatement[]>;
  /** A V8 CPU profile of the server's main thread between the two calls, written to `file`. */
  profileStart(): Promise<void>;
  profileStop(file: string): Promise<string>;
  /** The server's memory (process.memoryUsage) after a full garbage collection. */
  memory(): Promise<NodeJS.MemoryUsage>;
  /** SIGTERM: the server drains and exits. */
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts `src/main.ts` as its own process, exactly as `npm run serve` does, plus the SQL probe.
 * `env` is the server's whole configuration (DATABASE_URL or DATA_DIR, AUTH_JWT_SECRET); `root`
 * the work tree whose server it is (another commit's checkout, to measure it beside this one).
 */
export async function startServer(env: Record<string, string>, root = ROOT): Promise<ServerProcess> {
  const port = await freePort();
  const inherited = { ...process.env };
  delete inherited.DATABASE_URL;
  const args = [
    ...(process.env.TRACE_GC ? ['--trace-gc'] : []),
    ...SERVE_FLAGS,
    '--import',
    'tsx',
    '--import',
    PROBE,
    'src/main.ts',
  ];
  const child: ChildProcess = spawn(process.execPath, args, {
    cwd: root,
    // The fleet of a fan-out or storm is one principal with a connection per subscriber: far past
    // the per-principal caps a real dashboard meets (README, Security model).
    env: {
      WS_MAX_CONNECTIONS_PER_PRINCIPAL: '100000',
      WS_MAX_SUBSCRIPTIONS_PER_PRINCIPAL: '100000',
      // Thousands of handshakes at once (the memory curve) keep the event loop busy for seconds.
      WS_INIT_TIMEOUT_MS: '60000',
      ...SERVE_MALLOC_ENV,
      ...inherited,
      ...env,
      PORT: String(port),
      HOST: '127.0.0.1',
      NODE_ENV: 'production',
    },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-20_000);
    if (process.env.TRACE_GC) process.stderr.write(chunk);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  let exited = false;
  const exit = new Promise<void>((resolve) => child.once('exit', () => ((exited = true), resolve())));

  const ask = ipcClient(child);

  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (exited) throw new Error(`The server exited during start-up:\n${output}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`The server was not ready within 120 s:\n${output}`);
    }
    try {
      const response = await fetch(`${base}/readyz`);
      if (response.ok) break;
    } catch {
      // not listening yet
    }
    await pause(100);
  }

  return {
    url: `${base}/graphql`,
    wsUrl: `ws://127.0.0.1:${port}/graphql`,
    pid: child.pid!,
    counts: () => ask<ProbeCounts>({ command: 'counts' }),
    traceStart: (mode = 'all') => ask<void>({ command: 'trace-start', mode }),
    traceTake: () => ask<TracedStatement[]>({ command: 'trace-take' }),
    profileStart: () => ask<void>({ command: 'profile-start' }),
    memory: () => ask<NodeJS.MemoryUsage>({ command: 'memory' }),
    profileStop: (file) => ask<string>({ command: 'profile-stop', file }),
    async stop() {
      if (exited) return;
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      await exit;
      clearTimeout(killer);
    },
  };
}
