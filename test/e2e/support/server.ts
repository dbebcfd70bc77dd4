import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as pause } from 'node:timers/promises';
import { afterAll, beforeAll, inject } from 'vitest';
import { mintToken } from '../../../src/auth/jwt.js';
import type { Role } from '../../../src/domain/principal.js';
import { requirePostgresUrl } from '../../support/database.js';
import { createTestStorage, type TestStorage } from '../../support/storage.js';
import { withTimeout } from './wait.js';

export const E2E_JWT_SECRET = 'e2e-secret-that-is-long-enough-for-hs256';

/** A token for `sub` with `role`, signed with the secret every e2e server is started with. */
export const tokenFor = (sub: string, role: Role) => mintToken(E2E_JWT_SECRET, { sub, role }, '1h');

/** Unique subs per call, so scenarios sharing one server never share an owner. */
let actorCount = 0;
export async function e2eActors() {
  const suffix = `${process.pid}-${++actorCount}`;
  const ownerSub = `e2e-owner-${suffix}`;
  const workerSub = `e2e-worker-${suffix}`;
  return { ownerSub, owner: await tokenFor(ownerSub, 'superadmin'), workerSub, worker: await tokenFor(workerSub, 'worker') };
}

export interface ServerProcess {
  /** http://127.0.0.1:<port>/graphql */
  url: string;
  /** ws://127.0.0.1:<port>/graphql */
  wsUrl: string;
  child: ChildProcess;
  /** Everything the process printed so far, for failure messages. */
  output(): string;
  /** Resolves with the exit code (or the signal's name) once the process has exited. */
  exited: Promise<number | NodeJS.Signals>;
  /** Sends `signal` and waits for the exit, at most `timeoutMs`. */
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<number | NodeJS.Signals>;
}

const running = new Set<ServerProcess>();
const REPO_ROOT = join(import.meta.dirname, '../../..');

export async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve, reject) => probe.once('error', reject).listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

async function waitUntilReady(server: ServerProcess, timeoutMs: number): Promise<void> {
  const readyz = server.url.replace(/\/graphql$/, '/readyz');
  const deadline = Date.now() + timeoutMs;
  let exitedWith: number | string | undefined;
  void server.exited.then((code) => (exitedWith = code));
  while (Date.now() < deadline) {
    if (exitedWith !== undefined) throw new Error(`The server exited (${exitedWith}) before it was ready:\n${server.output()}`);
    const ready = await fetch(readyz).then(
      (response) => response.status === 200,
      () => false,
    );
    if (ready) return;
    await pause(100);
  }
  throw new Error(`The server was not ready within ${timeoutMs} ms:\n${server.output()}`);
}

/**
 * The server process with `env` over this process's (this run's bundle of src/main.ts when there
 * is one), not waited for: its output so far, and its exit code (or signal's name).
 */
export function spawnServer(env: Record<string, string>) {
  const bundle = inject('serverBundle');
  const child = spawn(process.execPath, bundle ? [bundle] : ['--import', 'tsx', 'src/main.ts'], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | NodeJS.Signals>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal!)));
  return { child, exited, output: () => output };
}

/**
 * Starts `src/main.ts` in its own process, as `npm run serve` does (from this run's bundle of it
 * when there is one: test/support/server-bundle.ts), on a free port with `storage`, and waits for
 * /readyz (at most `readyWithinMs`). Call `killServers()` in afterAll.
 */
export async function startServer(storage: TestStorage, env: Record<string, string> = {}, { readyWithinMs = 90_000 } = {}): Promise<ServerProcess> {
  const port = await freePort();
  const { child, exited, output } = spawnServer({
    ...storage.env,
    NODE_ENV: 'production',
    HOST: '127.0.0.1',
    PORT: String(port),
    AUTH_JWT_SECRET: E2E_JWT_SECRET,
    REDIS_URL: '',
    // No load balancer to wait for; the drain tests set their own.
    SHUTDOWN_DRAIN_MS: '0',
    ...env,
  });

  const server: ServerProcess = {
    url: `http://127.0.0.1:${port}/graphql`,
    wsUrl: `ws://127.0.0.1:${port}/graphql`,
    child,
    output,
    exited,
    async stop(signal = 'SIGTERM', timeoutMs = 30_000) {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return withTimeout(exited, timeoutMs, () => `The server did not exit after ${signal}:\n${output()}`);
    },
  };
  running.add(server);
  void exited.then(() => running.delete(server));
  try {
    await waitUntilReady(server, readyWithinMs);
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  return server;
}

/** The JSON log lines the server process printed so far. */
export const jsonLines = (server: Pick<ServerProcess, 'output'>) =>
  server
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { level: string; msg: string; [key: string]: unknown });

/** SIGKILLs every server process still running; for afterAll, whatever the tests did. */
export async function killServers(): Promise<void> {
  await Promise.all(
    [...running].map((server) => {
      server.child.kill('SIGKILL');
      return server.exited;
    }),
  );
}

/**
 * Fresh storage for the test file: made before its tests (none when `runs` is false; PostgreSQL
 * asked for first when `postgresOnly`), removed after them with every server process still
 * running killed. The returned function gives it to the file's tests and later hooks.
 */
export function storageForFile({ runs = true, postgresOnly = false } = {}): () => TestStorage {
  let storage: TestStorage | undefined;
  beforeAll(async () => {
    if (!runs) return;
    if (postgresOnly) requirePostgresUrl();
    storage = await createTestStorage();
  });
  afterAll(async () => {
    await killServers();
    await storage?.remove();
  });
  return () => {
    if (!storage) throw new Error('the storage is made before the tests (beforeAll)');
    return storage;
  };
}

/**
 * The test file's own server process on fresh storage (with `env` on top of startServer's):
 * started before its tests, killed with its storage removed after them. `url`, `wsUrl`, the
 * `process` and its `storage` are there from the file's tests and later hooks on.
 */
export function serverForFile(env: Record<string, string> = {}): {
  readonly url: string;
  readonly wsUrl: string;
  readonly process: ServerProcess;
  readonly storage: TestStorage;
} {
  const storage = storageForFile();
  let server: ServerProcess | undefined;
  beforeAll(async () => {
    server = await startServer(storage(), env);
  }, 120_000);
  const started = () => {
    if (!server) throw new Error('the server process starts before the tests (beforeAll)');
    return { server, storage: storage() };
  };
  return {
    get url() {
      return started().server.url;
    },
    get wsUrl() {
      return started().server.wsUrl;
    },
    get process() {
      return started().server;
    },
    get storage() {
      return started().storage;
    },
  };
}

/**
 * Runs a command a doc tells users to run, as written, by bash from the repository's root: each
 * placeholder (`<owner sub>`) replaced by its value, shell-quoted.
 */
export function runAsWritten(command: string, values: Record<string, string>, env: Record<string, string> = {}): Promise<{ code: number | null; output: string }> {
  for (const [placeholder, value] of Object.entries(values)) command = command.replace(placeholder, `'${value.replaceAll("'", "'\\''")}'`);
  const child = spawn('bash', ['-c', command], { cwd: REPO_ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, output })));
}

/** A GraphQL request to a server process, as any client sends it. */
export async function gqlAt(url: string, token: string, query: string, variables: Record<string, unknown> = {}) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
  });
  return (await response.json()) as { data?: any; errors?: { message: string; extensions?: { code?: string } }[] };
}

/** Runs a TypeScript entry point of the project (e.g. a CLI) to its end, at most `timeoutMs`. */
export async function runScript(
  script: string,
  args: string[],
  env: Record<string, string> = {},
  timeoutMs = 120_000,
): Promise<{ code: number | NodeJS.Signals; output: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | NodeJS.Signals>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal!)));
  try {
    return { code: await withTimeout(exited, timeoutMs, () => `${script} did not finish:\n${output}`), output };
  } finally {
    child.kill('SIGKILL');
  }
}
