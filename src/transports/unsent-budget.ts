import { slowConsumerCloses } from '../metrics.js';
import { log } from '../log.js';

/**
 * How long a stream ended as a slow consumer has to read what it was sent before its connection
 * is cut with a TCP reset (less than ws's own closing timeout, 30 s, which closes it normally).
 */
const SLOW_CONSUMER_CUT_MS = 20_000;

/**
 * After a stream was ended as a slow consumer: `cut` (a TCP reset) unless `stream` closed within
 * SLOW_CONSUMER_CUT_MS. Closed normally, the kernel would keep the socket, and the bytes it holds
 * (megabytes for a client that stopped reading), until it gave up sending them.
 */
export function cutUnlessClosed(stream: { once(event: 'close', listener: () => void): unknown }, cut: () => void): void {
  const timer = setTimeout(cut, SLOW_CONSUMER_CUT_MS);
  stream.once('close', () => clearTimeout(timer));
}

/** One principal's live stream as the budget sees it: an SSE response or a graphql-ws connection. */
export interface Outlet {
  transport: 'sse' | 'ws';
  /** Bytes written to it that its socket has not taken yet. */
  unsent(): number;
  /** Ends it as a slow consumer (SSE: the response ends; graphql-ws: closed with 1013). */
  end(): void;
}

interface Tracked {
  sub: string;
  outlet: Outlet;
  /** Bytes unsent at the last look. */
  bytes: number;
  /** Since when it has held bytes unsent without its socket draining (ms, performance.now), or null. */
  since: number | null;
}

/**
 * MAX_UNSENT_BYTES_PER_PRINCIPAL (docs/subscriptions.md, "A subscriber that falls behind"): what
 * one principal's SSE streams and graphql-ws connections together hold written but unsent. Each
 * stream sends only as fast as its client reads, so one stream holds little; five hundred unread
 * ones of one principal held a gigabyte, and their sockets the kernel's memory, for as long as
 * their client kept them open. A write that leaves bytes unsent is checked
 * here; past the budget the principal's streams that have held bytes unsent the longest (those
 * not reading) are ended as slow consumers until the rest is within it, and the rest go on.
 */
export function unsentBudget(maxBytes: number) {
  const outletsOf = new Map<string, Set<Tracked>>();
  const tracked = new WeakMap<object, Tracked>();

  function forget(entry: Tracked): void {
    const outlets = outletsOf.get(entry.sub);
    outlets?.delete(entry);
    if (outlets?.size === 0) outletsOf.delete(entry.sub);
  }

  /** The principal's outlets, each with its bytes unsent now, and their total. */
  function look(outlets: Set<Tracked>): number {
    const now = performance.now();
    let total = 0;
    for (const entry of outlets) {
      entry.bytes = entry.outlet.unsent();
      if (entry.bytes === 0) entry.since = null;
      else entry.since ??= now;
      total += entry.bytes;
    }
    return total;
  }

  return {
    maxBytes,

    /** Counts `outlet` (keyed by its response or socket) against `sub`'s budget; returns its release. */
    track(key: object, sub: string, outlet: Outlet): () => void {
      const entry: Tracked = { sub, outlet, bytes: 0, since: null };
      tracked.set(key, entry);
      let outlets = outletsOf.get(sub);
      if (!outlets) outletsOf.set(sub, (outlets = new Set()));
      outlets.add(entry);
      return () => {
        tracked.delete(key);
        forget(entry);
      };
    },

    /** Its socket took everything written to it. */
    drained(key: object): void {
      const entry = tracked.get(key);
      if (entry) entry.since = null;
    },

    /** After a write to `key` that left bytes unsent: past the budget, ends its principal's slowest streams. */
    wrote(key: object): void {
      const entry = tracked.get(key);
      const outlets = entry && maxBytes !== Number.POSITIVE_INFINITY ? outletsOf.get(entry.sub) : undefined;
      if (!outlets) return;
      let total = look(outlets);
      if (total <= maxBytes) return;
      const slowest = [...outlets].filter((other) => other.since !== null).sort((a, b) => a.since! - b.since! || b.bytes - a.bytes);
      for (const victim of slowest) {
        if (total <= maxBytes) break;
        forget(victim);
        total -= victim.bytes;
        log.warn({ component: 'realtime', transport: victim.outlet.transport, unsentBytes: victim.bytes, principalUnsentBytes: total + victim.bytes }, "ending a stream of a principal whose streams hold too much unsent");
        slowConsumerCloses.inc({ transport: victim.outlet.transport, bound: 'principal' });
        victim.outlet.end();
      }
    },

    /** For /metrics: bytes unsent on every tracked stream, and the most one principal holds. */
    usage(): { total: number; largestPrincipal: number } {
      let total = 0;
      let largestPrincipal = 0;
      for (const outlets of outletsOf.values()) {
        let own = 0;
        for (const entry of outlets) own += entry.outlet.unsent();
        total += own;
        largestPrincipal = Math.max(largestPrincipal, own);
      }
      return { total, largestPrincipal };
    },
  };
}

export type UnsentBudget = ReturnType<typeof unsentBudget>;
