import { AsyncLocalStorage } from 'node:async_hooks';

/** A read in progress and its request's signal, which aborts when its client goes. */
interface Read {
  signal: AbortSignal;
  done: boolean;
}

const reads = new AsyncLocalStorage<Read>();

/**
 * Runs the read `run` (a GraphQL query; never a mutation, below) so that the database's
 * connections it takes know when nobody waits for it any more: on PostgreSQL (postgres.ts), once
 * `signal` aborts, its statements are cancelled and it gets no further connection.
 * Mutations are left to finish: a lifecycle mutation's transaction carries other requests'
 * events too (src/domain/lifecycle-events.ts), and a worker whose connection dropped sends the
 * same operation again, which finds it done rather than doing it anew.
 */
export async function whileWaitedFor<T>(signal: AbortSignal, run: () => Promise<T>): Promise<T> {
  const read: Read = { signal, done: false };
  try {
    return await reads.run(read, run);
  } finally {
    // Whatever the read started that outlives it (a timer, a cache's fill) is nobody's read.
    read.done = true;
  }
}

/** The signal of the read running here, while it runs. */
export const readSignal = (): AbortSignal | undefined => {
  const read = reads.getStore();
  return read && !read.done ? read.signal : undefined;
};
