// What a measured window used of the machine: the cores by process (cpu-shares.ts) and the
// database connections (pool-meter.ts) of the side it measures (the bench's floor pool, or the
// server's pool through its probe).
import { cpuShares, combineShares, sampleCpu, type CpuSample, type CpuShares } from './cpu-shares.js';
import type { PoolUse } from './pool-meter.js';
import type { WindowEdges } from './write-path.js';

export interface WindowUse {
  cpu: CpuShares;
  /** The measured side's connections over the window: null where it has no pool (PGlite). */
  pool: PoolUse | null;
}

/**
 * Edges for a window (write-path.ts `WindowEdges`) and its use once it closed. `serverPid`: the
 * server process (null: not counted); `database`: the PostgreSQL database whose backends count;
 * `pool`: the measured side's pool counts so far, or null.
 */
export function windowUse(serverPid: number | null, database: string | null, pool: (() => PoolUse | Promise<PoolUse>) | null) {
  const samples: CpuSample[] = [];
  const pools: Promise<PoolUse>[] = [];
  const read = () => {
    samples.push(sampleCpu(serverPid, database));
    if (pool) pools.push(Promise.resolve(pool()));
  };
  const edges: WindowEdges = { open: read, close: read };
  return {
    edges,
    async use(): Promise<WindowUse> {
      if (samples.length !== 2) throw new Error(`a window's use needs its two edges, not ${samples.length}`);
      const [before, after] = await Promise.all(pools);
      return {
        cpu: cpuShares(samples[0]!, samples[1]!),
        pool: before && after ? { checkouts: after.checkouts - before.checkouts, waitedMs: after.waitedMs - before.waitedMs, heldMs: after.heldMs - before.heldMs } : null,
      };
    },
  };
}

/** Windows of one kind as one: CPU over their seconds, pool counts added up. */
export function combineUses(windows: WindowUse[]): WindowUse {
  const pools = windows.map((window) => window.pool);
  return {
    cpu: combineShares(windows.map((window) => window.cpu)),
    pool: pools.every((pool) => pool !== null)
      ? pools.reduce((total, pool) => ({ checkouts: total.checkouts + pool.checkouts, waitedMs: total.waitedMs + pool.waitedMs, heldMs: total.heldMs + pool.heldMs }), { checkouts: 0, waitedMs: 0, heldMs: 0 })
      : null,
  };
}
