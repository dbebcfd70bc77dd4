import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { resourceFromAttributes } from '@opentelemetry/resources';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { Database } from '../db/database.js';
import { exportHeldSince } from '../domain/database-identity.js';
import { exportDroppedSpans, exportedSpans, exportFailures, exportHeld, exportLagSeconds, exportRejectedSpans } from '../metrics.js';
import type { ExportConfig } from './config.js';
import { claimThreads, readChanges, release, takeBackEarlierClaims, unclaim, type ExportBatch } from './queue.js';
import { otlpTransport, ReceiverFailed } from './otlp-transport.js';
import { spansOf } from './spans.js';
import { errorFields, log, outsideErrorFields } from '../log.js';

export interface ExporterOptions {
  /** Threads claimed at once (the batch). */
  threadsPerBatch?: number;
  /** Changes read per thread and table in one batch: with threadsPerBatch, the bound on what is held in memory. */
  pageSize?: number;
  /** Spans per OTLP request. */
  spansPerRequest?: number;
  /** Span text per OTLP request (requestsOf): within what receivers take in one request. */
  bytesPerRequest?: number;
  /** How long a claim keeps other exporters off a thread (an exporter that dies gives it up after this). */
  claimSeconds?: number;
  /** The longest wait between attempts while the receiver keeps failing. */
  maxBackoffMs?: number;
  /**
   * This instance's name, the same at every start (INSTANCE_ID): a start takes back at once the
   * claims an earlier start of it left (a kill -9) instead of waiting for them to expire. Unset:
   * a name of this start only.
   */
  instanceId?: string;
  /** How the exporter waits `ms` between attempts and polls (tests record the waits instead); it must end when `signal` aborts (a stop). */
  wait?: (ms: number, signal: AbortSignal) => Promise<void>;
}

/**
 * Spans cut into requests of at most `maxSpans` spans and about `maxBytes` of text (a span alone
 * may pass it: its payloads are never cut). A receiver bounds a request's body (the OpenTelemetry
 * Collector at 20 MiB by default), and a request it refuses is sent again whole, forever.
 */
export function requestsOf(spans: ReadableSpan[], maxSpans: number, maxBytes: number): ReadableSpan[][] {
  const requests: ReadableSpan[][] = [];
  let request: ReadableSpan[] = [];
  let bytes = 0;
  for (const span of spans) {
    const size = spanBytes(span);
    if (request.length > 0 && (request.length === maxSpans || bytes + size > maxBytes)) {
      requests.push(request);
      request = [];
      bytes = 0;
    }
    request.push(span);
    bytes += size;
  }
  if (request.length > 0) requests.push(request);
  return requests;
}

/** A span's text as sent: its attributes' and events' strings (payloads as JSON), and a little for the rest. */
function spanBytes(span: ReadableSpan): number {
  const textOf = (attributes: Record<string, unknown> = {}) =>
    Object.entries(attributes).reduce((sum, [key, value]) => sum + key.length + (typeof value === 'string' ? Buffer.byteLength(value) : 16), 0);
  return 1024 + Buffer.byteLength(span.status.message ?? '') + textOf(span.attributes) + span.events.reduce((sum, event) => sum + textOf(event.attributes), 0);
}

/** A request's content the receiver refused (400 Bad Request): every copy of it gets the same answer. */
const isRefused = (error: unknown) => error instanceof ReceiverFailed && error.code === 400;
/** A request past the receiver's size limit (413), often a proxy's in front of it (nginx's is 1 MiB). */
const isTooLarge = (error: unknown) => error instanceof ReceiverFailed && error.code === 413;

/** The longest Retry-After honoured: a receiver (or a proxy) asking for more is tried again after this. */
const MAX_RETRY_AFTER_MS = 60 * 60_000;

/**
 * Follows the export queue (queue.ts) and sends every ended run and audit as OTLP spans
 * (spans.ts). Claims a batch of pending threads, reads their changes since their export
 * positions, sends them, and only then advances the positions: a failure leaves the positions
 * where they were, so the same changes are sent again after a backoff (at least once). Nothing
 * here is on a write's path: writes only leave a pending row for a thread (a trigger).
 */
export function startExporter(db: Database, config: ExportConfig, options: ExporterOptions = {}) {
  const threadsPerBatch = options.threadsPerBatch ?? 32;
  const pageSize = options.pageSize ?? 256;
  const spansPerRequest = options.spansPerRequest ?? 512;
  let bytesPerRequest = options.bytesPerRequest ?? 4 * 1024 * 1024;
  const claimSeconds = options.claimSeconds ?? 30;
  const maxBackoffMs = options.maxBackoffMs ?? 30_000;
  const instanceId = options.instanceId ?? `${hostname()}:${process.pid}`;
  const owner = `${instanceId}/${randomUUID()}`;
  const transport = otlpTransport(config);
  const resource = resourceFromAttributes({ 'service.name': config.serviceName });

  let stopped = false;
  // A stop ends the wait under way and abandons the request in flight: its spans are sent again by the next start.
  const stopping = new AbortController();
  const wait = options.wait ?? ((ms: number, signal: AbortSignal) => sleep(ms, undefined, { signal }));
  const pause = (ms: number) => wait(ms, stopping.signal).catch(() => undefined);

  /** Sends a request the receiver takes, or throws; the spans it says it rejected (partial success) are counted and logged, not sent again. */
  async function send(spans: ReadableSpan[]): Promise<void> {
    const { rejectedSpans, receiverMessage } = await transport.send(spans, stopping.signal);
    if (rejectedSpans > 0 || receiverMessage) {
      exportRejectedSpans.inc(rejectedSpans);
      log.warn({ component: 'export', rejectedSpans, receiverMessage }, 'the receiver rejected spans (partial success)');
    }
  }

  /**
   * Sends a request; one the collector refuses as bad (400) is halved until each refused span is
   * alone, and that span is dropped (logged, counted): sent again it would be refused again, and
   * hold its batch's threads for ever. One refused as too large (413) is sent again in requests of
   * half its size, and later requests keep that size; a span refused as too large alone is set
   * aside the same way (its payloads are never cut). Any other failure is thrown (retried: it may
   * pass once the collector's settings or health change). Returns the spans the collector took;
   * `progress.settled` counts, in order, the spans taken or dropped so far, also when it throws.
   */
  async function sendOrDrop(spans: ReadableSpan[], progress: { settled: number }): Promise<number> {
    try {
      await send(spans);
      progress.settled += spans.length;
      return spans.length;
    } catch (error) {
      if (isTooLarge(error) && spans.length > 1) {
        const refusedBytes = spans.reduce((sum, span) => sum + spanBytes(span), 0);
        bytesPerRequest = Math.min(bytesPerRequest, Math.floor(refusedBytes / 2));
        log.warn({ component: 'export', refusedBytes, bytesPerRequest }, 'the receiver refused a request as too large (413); sending smaller ones');
        let taken = 0;
        for (const request of requestsOf(spans, spansPerRequest, bytesPerRequest)) taken += await sendOrDrop(request, progress);
        return taken;
      }
      const tooLarge = isTooLarge(error);
      if (!tooLarge && !isRefused(error)) throw error;
      if (spans.length > 1) {
        const half = Math.ceil(spans.length / 2);
        return (await sendOrDrop(spans.slice(0, half), progress)) + (await sendOrDrop(spans.slice(half), progress));
      }
      const span = spans[0]!;
      const { traceId, spanId } = span.spanContext();
      const fields = { component: 'export', error: outsideErrorFields(error), span: { traceId, spanId, name: span.name } };
      if (tooLarge) log.warn({ ...fields, spanBytes: spanBytes(span), bytesPerRequest }, 'the receiver refused a span as too large; set aside');
      else log.warn(fields, 'export refused a span; dropped');
      exportDroppedSpans.inc({ reason: tooLarge ? 'too_large' : 'refused' });
      progress.settled += 1;
      return 0;
    }
  }

  /**
   * One batch; true when the export is behind (a thread waited longer than a poll, or has more
   * than a page): then the next batch follows at once, else after a poll, so that an export that
   * keeps up sends a poll's worth of changes per batch instead of a batch per change.
   */
  let tookBack = false;
  /** Since when the export was held at the last look, said once when found and once when released. */
  let heldSince: Date | undefined;
  async function exportBatch(): Promise<boolean> {
    if (!tookBack) {
      await takeBackEarlierClaims(db.sql, instanceId, owner);
      tookBack = true;
    }
    // Read at every poll, so that a release reaches every instance without a restart. Only a start
    // on a restored database holds it, before any instance on that database exports.
    const held = await exportHeldSince(db.sql);
    exportHeld.set(held ? 1 : 0);
    if (held) {
      if (!heldSince) {
        log.warn(
          { component: 'export', heldSince: held },
          'export held: this database was restored (or copied), and the threads deleted since its backup are back; delete them again (examples/operations/redo-deletions.ts), then release the export: scripts/release-export.ts (docs/operations.md, "Backup and restore")',
        );
      }
      heldSince = held;
      return false;
    }
    if (heldSince) log.info({ component: 'export', heldSince }, 'export hold released: exporting');
    heldSince = undefined;
    const claimed = await claimThreads(db.sql, owner, threadsPerBatch, claimSeconds, config.pollMs / 1000);
    if (claimed.length === 0) return false;
    // The lag is read on the database's clock, which stamped the commits: this instance's own may differ.
    const claimedAtMs = performance.now();
    const databaseNowMs = () => claimed[0]!.databaseNow.getTime() + (performance.now() - claimedAtMs);
    const threadIds = claimed.map((claim) => claim.threadId);
    let batch: ExportBatch | undefined;
    // Spans in thread order; `ends[i]`: how many spans the threads up to the i-th have; `cursors`: each span's
    // change cursor; `progress.settled`: how many the receiver took (or were dropped), in order.
    let ends: number[] = [];
    let cursors: bigint[] = [];
    const progress = { settled: 0 };
    try {
      batch = await readChanges(db.driver, threadIds, pageSize);
      const perThread = batch.threads.map((thread) => spansOf(resource, { ...batch!, threads: [thread] }));
      const spans = perThread.flatMap((thread) => thread.spans);
      const changedAt = perThread.flatMap((thread) => thread.changedAt);
      cursors = perThread.flatMap((thread) => thread.cursors);
      let end = 0;
      ends = perThread.map((thread) => (end += thread.spans.length));
      for (const request of requestsOf(spans, spansPerRequest, bytesPerRequest)) {
        const from = progress.settled;
        const taken = await sendOrDrop(request, progress);
        const now = databaseNowMs();
        for (const committed of changedAt.slice(from, progress.settled)) exportLagSeconds.observe((now - committed.getTime()) / 1000);
        exportedSpans.inc(taken);
      }
      await release(db.sql, owner, batch.threads);
      return claimed.some((claim) => claim.behind) || batch.threads.some((thread) => thread.more);
    } catch (error) {
      // What the receiver took before the failure (or a stop) keeps its place: not sent again. A thread
      // partly taken advances to just before its first span not taken (its spans are in cursor order).
      const { settled } = progress;
      const done = (batch?.threads ?? []).flatMap((thread, index) =>
        ends[index]! <= settled ? [thread] : settled > (ends[index - 1] ?? 0) ? [{ threadId: thread.threadId, coveredTo: cursors[settled]! - 1n }] : [],
      );
      if (done.length > 0) await release(db.sql, owner, done).catch(() => undefined);
      await unclaim(db.sql, owner, threadIds).catch(() => undefined); // else the claim expires
      throw error;
    }
  }

  const running = (async () => {
    let backoffMs = 0;
    // Since when, and how many tries, the export has been failing: the batch that passes says so once.
    let failing: { sinceMs: number; tries: number } | undefined;
    while (!stopped) {
      try {
        const behind = await exportBatch();
        backoffMs = 0;
        if (failing) log.info({ component: 'export', failedTries: failing.tries, failingForMs: Date.now() - failing.sinceMs }, 'export resumed after failures');
        failing = undefined;
        if (!behind) await pause(config.pollMs);
      } catch (error) {
        if (stopped) break;
        const receiver = error instanceof ReceiverFailed ? error : undefined;
        exportFailures.inc({ reason: receiver?.reason ?? 'internal' });
        failing = { sinceMs: failing?.sinceMs ?? Date.now(), tries: (failing?.tries ?? 0) + 1 };
        backoffMs = Math.min(maxBackoffMs, Math.max(500, backoffMs * 2));
        // The receiver's Retry-After when it gave one (429, 503): as long as it asked, neither sooner nor later.
        const asked = receiver?.retryAfterMs;
        const retryInMs = asked !== undefined ? Math.min(asked, MAX_RETRY_AFTER_MS) : Math.round(backoffMs * (0.8 + 0.4 * Math.random()));
        const fields = receiver
          ? { reason: receiver.reason, error: { message: receiver.message, code: receiver.errorCode }, status: receiver.code, retryAfterMs: asked }
          : { reason: 'internal', error: errorFields(error) };
        log.warn({ component: 'export', ...fields, retryInMs }, 'export failed; retrying');
        await pause(retryInMs);
      }
    }
  })();

  return {
    owner,
    /** Stops at once: a wait ends, the request in flight is abandoned (the batch's positions stay: its spans are sent again by the next start). */
    async stop() {
      stopped = true;
      stopping.abort();
      await running;
    },
  };
}
