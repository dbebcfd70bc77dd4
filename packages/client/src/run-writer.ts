import { isAuditApiError, type AuditApiError } from './errors.js';
import { notify } from './callbacks.js';
import { AuditLeaseLostError } from './lease-lost.js';
import { untilAborted } from './abort.js';

/**
 * Write answers after which no write of the run can succeed again: NOT_FOUND is a run that no
 * longer exists, its thread deleted (docs/deletion.md).
 */
export const RUN_GONE_CODES = ['LEASE_LOST', 'LEASE_EXPIRED', 'NOT_FOUND'] as const;

/**
 * The writes of one run, sent one after another in the order the events happened (a tool
 * start must reach the server after the model call that declared it). The agent waits for a
 * write at most `budgetMs`; after that it goes on and the write completes in the background.
 * Once the lease is lost, nothing more is sent and every caller gets an AuditLeaseLostError.
 */
export class RunWriter {
  private tail: Promise<void> = Promise.resolve();
  private lost: AuditLeaseLostError | undefined;
  private givenUp = false;
  readonly failures: unknown[] = [];

  constructor(
    private readonly runId: string,
    private readonly budgetMs: number,
    private readonly onLost: (error: AuditLeaseLostError) => void,
    private readonly onWriteError: (error: unknown) => void = () => {},
  ) {}

  get leaseLost(): AuditLeaseLostError | undefined {
    return this.lost;
  }

  /** Queues `write` after every earlier one and waits for it, at most the budget. */
  async submit(write: () => Promise<unknown>): Promise<void> {
    this.throwIfLost();
    const done = this.tail.then(async () => {
      if (this.lost || this.givenUp) return;
      try {
        await write();
      } catch (error) {
        if (isAuditApiError(error, ...RUN_GONE_CODES)) this.markLost(error);
        else {
          this.failures.push(error);
          notify('onWriteError', this.onWriteError, error);
        }
      }
    });
    this.tail = done;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const budget = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, this.budgetMs);
      timer.unref?.();
    });
    await Promise.race([done, budget]).finally(() => clearTimeout(timer));
    this.throwIfLost();
  }

  /** A failure outside the writes (the lease keeper's), reported as a write's would be. */
  reportFailure(error: unknown): void {
    this.failures.push(error);
    notify('onWriteError', this.onWriteError, error);
  }

  markLost(cause: AuditApiError): void {
    if (this.lost) return;
    this.lost = new AuditLeaseLostError(this.runId, cause);
    this.onLost(this.lost);
  }

  /** Resolves once every queued write has been answered; `signal` stops waiting (rejecting with its reason). */
  drain(signal?: AbortSignal): Promise<void> {
    return untilAborted(signal, this.tail);
  }

  /** The run's end was given up (a shutdown out of time): the writes still queued are never sent. */
  giveUp(): void {
    this.givenUp = true;
  }

  throwIfLost(): void {
    if (this.lost) throw this.lost;
  }
}
