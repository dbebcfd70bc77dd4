import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { servicesRequired } from './database.js';

/** Debian's PgBouncer (`apt-get install -y pgbouncer`; .ci/run installs it). */
export const PGBOUNCER = process.env.PGBOUNCER_PATH ?? '/usr/sbin/pgbouncer';

/**
 * Whether the PgBouncer suites run: always in CI's services pass (REQUIRE_SERVICES=1), where a
 * missing binary then fails them instead of skipping.
 */
export function pgbouncerSuiteRuns(suite: string): boolean {
  const present = spawnSync(PGBOUNCER, ['--version']).status === 0;
  if (!present && !servicesRequired) console.warn(`Skipping ${suite}: no PgBouncer at ${PGBOUNCER} (apt-get install -y pgbouncer)`);
  return present || servicesRequired;
}

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });

export interface PgBouncer {
  /** A URL through PgBouncer to `database` pooled in `mode`. */
  url(mode: 'session' | 'transaction'): string;
  /** Stops PgBouncer at once (every connection through it drops) and starts it again on the same port. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * A PgBouncer of its own in front of the PostgreSQL database `databaseUrl` names, with two
 * entries: `<db>_session` and `<db>_transaction`. It refuses to run as root: as root it is told
 * to run as `postgres`, and its files are made readable.
 */
export async function startPgBouncer(databaseUrl: string): Promise<PgBouncer> {
  const target = new URL(databaseUrl);
  const database = decodeURIComponent(target.pathname.slice(1));
  const user = decodeURIComponent(target.username) || 'postgres';
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'pgbouncer-'));
  chmodSync(dir, 0o755);
  const server = `host=${target.hostname} port=${target.port || 5432} dbname=${database} user=${user}${target.password ? ` password=${decodeURIComponent(target.password)}` : ''}`;
  writeFileSync(
    join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `${database}_session = ${server} pool_mode=session`,
      `${database}_transaction = ${server} pool_mode=transaction`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${join(dir, 'userlist.txt')}`,
      'default_pool_size = 5',
      '',
    ].join('\n'),
  );
  writeFileSync(join(dir, 'userlist.txt'), `"${user}" ""\n`);
  for (const file of ['pgbouncer.ini', 'userlist.txt']) chmodSync(join(dir, file), 0o644);

  let child: ChildProcess | undefined;
  const start = async () => {
    const args = [...(process.getuid?.() === 0 ? ['-u', 'postgres'] : []), join(dir, 'pgbouncer.ini')];
    const started = spawn(PGBOUNCER, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    child = started;
    let output = '';
    started.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    await new Promise<void>((resolve, reject) => {
      started.on('exit', (code) => reject(new Error(`PgBouncer exited (${code}): ${output}`)));
      started.stderr!.on('data', () => output.includes('process up') && resolve());
    });
  };
  const stop = async () => {
    const running = child;
    if (!running || running.exitCode !== null) return;
    // SIGTERM: PgBouncer's immediate shutdown, as a crash or a redeploy of the pooler would do.
    await new Promise<void>((resolve) => {
      running.once('exit', () => resolve());
      running.kill('SIGTERM');
    });
  };
  await start();
  return {
    url(mode) {
      const url = new URL(databaseUrl);
      url.port = String(port);
      url.pathname = `/${database}_${mode}`;
      return url.toString();
    },
    async restart() {
      await stop();
      await start();
    },
    async stop() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
