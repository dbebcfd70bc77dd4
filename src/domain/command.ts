import type { PrismaClient } from '../generated/prisma/client.js';
import { inTransaction, type Tx } from '../db/transaction.js';
import type { DomainEvent } from './events.js';

export interface Limits {
  leaseMinSeconds: number;
  leaseMaxSeconds: number;
  maxJsonBytes: number;
}

/** What every domain command needs: the database, the event sink, the configured limits. */
export interface DomainDeps {
  prisma: PrismaClient;
  /** Called once per committed command with the events it emitted; never for a rolled-back one. */
  publish(events: DomainEvent[]): void;
  limits: Limits;
}

export interface CommandScope {
  tx: Tx;
  deps: DomainDeps;
  emit(event: DomainEvent): void;
}

/**
 * Wraps a domain operation as one transaction that publishes its events after commit.
 * A failed command changes nothing and publishes nothing.
 */
export function command<Args extends unknown[], T>(
  body: (scope: CommandScope, ...args: Args) => Promise<T>,
): (deps: DomainDeps, ...args: Args) => Promise<T> {
  return async (deps, ...args) => {
    let events: DomainEvent[] = [];
    const value = await inTransaction(deps.prisma, (tx) => {
      events = []; // a retried attempt starts afresh
      return body({ tx, deps, emit: (event) => events.push(event) }, ...args);
    });
    if (events.length > 0) deps.publish(events);
    return value;
  };
}
