// How long node-postgres connections are waited for and held: the server's (its pool's `connect`
// metered by server-probe.ts) and the floors' (sql.ts), so a window can say whether its requests
// queue for a connection and how long each checkout keeps one.
import { performance } from 'node:perf_hooks';
import type pg from 'pg';

export interface PoolUse {
  /** Connections checked out so far. */
  checkouts: number;
  /** From each `connect` call to its connection, summed. */
  waitedMs: number;
  /** From each checkout to its release, summed (over a window's length: connections busy on average). */
  heldMs: number;
}

/** This process's metered pools, counted together. */
const use: PoolUse = { checkouts: 0, waitedMs: 0, heldMs: 0 };
const metered = new WeakSet<pg.Pool>();

/** Counts the pool's checkouts and how long each is held (its acquire and release events), once per pool. */
function meter(pool: pg.Pool) {
  if (metered.has(pool)) return;
  metered.add(pool);
  const acquiredAt = new WeakMap<pg.PoolClient, number>();
  pool.on('acquire', (client) => {
    use.checkouts++;
    acquiredAt.set(client, performance.now());
  });
  pool.on('release', (_error, client) => {
    const at = acquiredAt.get(client);
    if (at !== undefined) use.heldMs += performance.now() - at;
    acquiredAt.delete(client);
  });
}

type Connect = pg.Pool['connect'];

/** `connect` timed from its call to its connection: set on one pool, or on pg.Pool's prototype (every pool of the process). */
export function meteredConnect(connect: Connect): Connect {
  return function (this: pg.Pool, callback?: Parameters<Connect>[0]) {
    meter(this);
    const called = performance.now();
    const waited = () => void (use.waitedMs += performance.now() - called);
    if (callback) return connect.call(this, (error, client, done) => (waited(), callback(error, client, done)));
    return (connect as () => Promise<pg.PoolClient>).call(this).then((client) => (waited(), client));
  } as Connect;
}

/** The metered pools' counts so far. */
export const poolUse = (): PoolUse => ({ ...use });
