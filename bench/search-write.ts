// The write-path cost of the audit search's trigram index (issue 32), run by bench/search.ts
// (`--parts write`): the worker's lifecycle mutations (lib/write-path.ts, over the server's HTTP
// API) against two fresh databases of the same backend, one with message_audit_search_owner_idx and one
// without it, each with its own server, in interleaved rounds so both sides see the same load.
// Besides events per second (wall time: noisy on a loaded machine), the database's CPU time per
// lifecycle event, which load changes far less: on PostgreSQL the CPU of the database's backends
// (from /proc), on PGlite the server process's (the database runs inside it).
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mintToken } from '../src/auth/jwt.js';
import type { Backend } from './lib/backend.js';
import { GraphQLHttp } from './lib/graphql-http.js';
import { startServer, type ServerProcess } from './lib/server-process.js';
import { round } from './lib/stats.js';
import { combineWindows, measureWritePath, serverTarget, type WriteWindow } from './lib/write-path.js';

export interface IndexWriteCost {
  workers: number;
  /** Events per second with the index, and without it (all rounds pooled). */
  withIndex: number;
  withoutIndex: number;
  /** Median of the rounds' ratios, with over without: below 1 means the index slows writes. */
  throughputRatio: number | null;
  roundRatios: (number | null)[];
  /** p50 of every lifecycle event's latency, with over without. */
  p50Ratio: number | null;
  p50With: number;
  p50Without: number;
  /** The database's CPU ms per lifecycle event, with and without the index, and their ratio. */
  cpuMsWith: number;
  cpuMsWithout: number;
  cpuRatio: number | null;
}

/** CPU ms used so far by the processes of `pids` (Linux /proc; utime + stime in clock ticks of 10 ms). */
function processCpuMs(pids: number[]): Map<number, number> {
  const used = new Map<number, number>();
  for (const pid of pids) {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      used.set(pid, (Number(fields[11]) + Number(fields[12])) * 10);
    } catch {
      // The backend has exited.
    }
  }
  return used;
}

/** The database's CPU ms so far: its PostgreSQL backends' (pids that come and go are followed), or the PGlite server's. */
async function databaseCpu(backend: Backend, server: ServerProcess): Promise<Map<number, number>> {
  if (backend.kind === 'pglite') {
    const { cpu } = await server.counts();
    return new Map([[0, (cpu.user + cpu.system) / 1000]]);
  }
  const pids = await backend.floor.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()');
  return processCpuMs(pids.map((row) => row.pid));
}

const cpuSpent = (before: Map<number, number>, after: Map<number, number>) =>
  [...after].reduce((total, [pid, ms]) => total + ms - (before.get(pid) ?? 0), 0);

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;

/**
 * What the second database goes without: the trigram index, or (`sizes`) the payload-size
 * columns' generation (they stay, as plain columns, so the server reads them alike).
 */
export const WITHOUT = {
  index: 'DROP INDEX message_audit_search_owner_idx',
  // Issue 44's owner on every audit: the owner copied onto tool audits alone, as before
  // 20261204000000_audit_owner, and no (owner_id, id) index.
  owner: `DROP INDEX message_owner_id_id_idx;
    CREATE OR REPLACE TRIGGER message_audit_owner BEFORE INSERT ON message
    FOR EACH ROW WHEN (NEW.message_type = 'tool_audit') EXECUTE FUNCTION message_audit_owner()`,
  sizes: `ALTER TABLE message ALTER COLUMN input_bytes DROP EXPRESSION, ALTER COLUMN output_bytes DROP EXPRESSION,
    ALTER COLUMN error_bytes DROP EXPRESSION`,
} as const;

export async function measureIndexWriteCost(
  openBackend: () => Promise<Backend>,
  options: { without: keyof typeof WITHOUT; workers: number[]; rounds: number; seconds: number; log: (line: string) => void },
): Promise<IndexWriteCost[]> {
  const secret = randomBytes(32).toString('base64url');
  const ownerToken = await mintToken(secret, { sub: 'bench-search-owner', role: 'superadmin' }, '2h');
  const maxWorkers = Math.max(...options.workers);
  const workerTokens = await Promise.all(Array.from({ length: maxWorkers }, (_, i) => mintToken(secret, { sub: `bench-worker-${i}`, role: 'worker' }, '2h')));
  const sides: { backend: Backend; server: ServerProcess; http: GraphQLHttp }[] = [];
  try {
    for (const indexed of [true, false]) {
      const backend = await openBackend();
      if (!indexed) await backend.beforeServer((sql) => sql.query(WITHOUT[options.without]));
      const server = await startServer({ ...backend.serverEnv, AUTH_JWT_SECRET: secret });
      sides.push({ backend, server, http: new GraphQLHttp(server.url) });
    }
    const results: IndexWriteCost[] = [];
    const windowMs = (options.seconds * 1000) / options.rounds;
    for (const workers of options.workers) {
      const windows: [WriteWindow[], WriteWindow[]] = [[], []];
      const cpuMs = [0, 0];
      for (let r = 0; r < options.rounds; r++) {
        // Alternate which side goes first, so neither always runs on the warmer machine.
        const order = r % 2 === 0 ? [0, 1] : [1, 0];
        for (const side of order) {
          const { http, backend, server } = sides[side]!;
          const before = await databaseCpu(backend, server);
          windows[side]!.push(await measureWritePath(serverTarget(http, ownerToken, workerTokens), workers, r === 0 ? 3000 : 1000, windowMs));
          cpuMs[side]! += cpuSpent(before, await databaseCpu(backend, server));
        }
        options.log(`  W=${workers} round ${r + 1}: with the ${options.without} ${Math.round(windows[0].at(-1)!.eventsPerSecond)} events/s, without ${Math.round(windows[1].at(-1)!.eventsPerSecond)}`);
      }
      const [withIndex, withoutIndex] = windows.map(combineWindows) as [ReturnType<typeof combineWindows>, ReturnType<typeof combineWindows>];
      const roundRatios = windows[0].map((window, i) => round(window.eventsPerSecond / windows[1][i]!.eventsPerSecond, 3));
      results.push({
        workers,
        withIndex: round(withIndex.eventsPerSecond, 0)!,
        withoutIndex: round(withoutIndex.eventsPerSecond, 0)!,
        throughputRatio: round(median(roundRatios.filter((ratio): ratio is number => ratio !== null)), 3),
        roundRatios,
        p50With: round(withIndex.eventLatencyMs.p50)!,
        p50Without: round(withoutIndex.eventLatencyMs.p50)!,
        p50Ratio: round(withIndex.eventLatencyMs.p50 / withoutIndex.eventLatencyMs.p50, 3),
        cpuMsWith: round(cpuMs[0]! / withIndex.phaseEvents, 3)!,
        cpuMsWithout: round(cpuMs[1]! / withoutIndex.phaseEvents, 3)!,
        cpuRatio: round(cpuMs[0]! / withIndex.phaseEvents / (cpuMs[1]! / withoutIndex.phaseEvents), 3),
      });
    }
    return results;
  } finally {
    for (const { server, backend, http } of sides) {
      await http.close();
      await server.stop().catch(() => {});
      await backend.close().catch(() => {});
    }
  }
}
