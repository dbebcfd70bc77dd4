import type { DomainDeps } from '../domain/command.js';
import { sweepExpiredLeases } from '../domain/convergence.js';
import { leaseSweeps, leaseSweptRuns } from '../metrics.js';
import { retriedWork } from '../db/outage.js';
import { log } from '../log.js';

/** Ends runs whose lease expired, every `intervalMs`; sweeps never overlap in one process. */
export function startLeaseSweeper(deps: DomainDeps, intervalMs: number) {
  let running: Promise<unknown> | null = null;
  const sweeps = retriedWork('lease-sweep', 'lease sweep', { component: 'lease-sweeper' });
  const sweep = () => {
    running ??= sweepExpiredLeases(deps)
      .then((ended) => {
        sweeps.succeeded();
        leaseSweeps.inc();
        leaseSweptRuns.inc(ended);
        // Only sweeps that ended runs: an empty sweep runs every LEASE_SWEEP_INTERVAL_MS.
        if (ended > 0) log.info({ component: 'lease-sweeper', endedRuns: ended }, 'lease sweep ended runs whose lease expired');
      })
      .catch((error: unknown) => sweeps.failed(error))
      .finally(() => (running = null));
    return running;
  };
  const timer = setInterval(sweep, intervalMs);
  timer.unref();
  return {
    sweep,
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
