import { afterEach, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../src/config.js';
import type { DomainEvent } from '../../src/domain/events.js';
import { StreamInterrupted, createPubSubFor } from '../../src/realtime/pubsub.js';

// The in-process pub/sub behind every subscription: per-thread topics, publish order, and the
// bound on how far a subscriber may fall behind (docs/subscriptions.md).

const auditEvent = (threadId: string, auditId: string): DomainEvent => ({ kind: 'audit', threadId, runId: 'run', auditId, role: 'TOOL' });

async function pubsubWithLimit(maxPendingEvents: number) {
  return createPubSubFor(loadConfig({}), { maxPendingEvents });
}

/** Reads what is already queued, without waiting for more. */
async function drain(iterator: AsyncIterator<unknown>, count: number) {
  const values: unknown[] = [];
  for (let i = 0; i < count; i++) values.push(await iterator.next());
  return values;
}

describe('in-process pub/sub', () => {
  it("delivers a thread's events of one topic, in publish order", async () => {
    const { pubsub, publishEvents, close } = await pubsubWithLimit(10);
    const audits = await pubsub.subscribe('audit', 'thread-a');
    publishEvents([auditEvent('thread-a', '1'), auditEvent('thread-b', 'other'), { kind: 'run', threadId: 'thread-a', runId: 'r' }]);
    publishEvents([auditEvent('thread-a', '2')]);
    const [first, second] = await drain(audits, 2);
    expect([first, second]).toEqual([
      { value: auditEvent('thread-a', '1'), done: false },
      { value: auditEvent('thread-a', '2'), done: false },
    ]);
    await close();
  });

  it('a subscriber may fall behind by the bound; one event more interrupts it and drops its backlog', async () => {
    const { pubsub, publishEvents, close } = await pubsubWithLimit(3);
    const audits = await pubsub.subscribe('audit', 't');
    publishEvents(['1', '2', '3'].map((id) => auditEvent('t', id)));
    expect((await drain(audits, 3)).map((result: any) => result.value.auditId)).toEqual(['1', '2', '3']);

    expect(() => publishEvents(['4', '5', '6', '7'].map((id) => auditEvent('t', id)))).not.toThrow();
    const interrupted = await audits.next();
    expect(interrupted.value).toBeInstanceOf(StreamInterrupted);
    expect(interrupted.value).toMatchObject({ reason: 'SUBSCRIBER_LAGGING' });
    expect(await audits.next()).toEqual({ value: undefined, done: true });
    // Detached at the source: later events cost it nothing.
    expect(pubsub.subscriberCount('audit', 't')).toBe(0);
    await close();
  });

  it('a subscriber that keeps reading is never interrupted, however many events pass', async () => {
    const { pubsub, publishEvents, close } = await pubsubWithLimit(2);
    const audits = await pubsub.subscribe('audit', 't');
    for (let i = 0; i < 50; i++) {
      publishEvents([auditEvent('t', String(i))]);
      expect((await audits.next()).value).toMatchObject({ auditId: String(i) });
    }
    expect(pubsub.subscriberCount('audit', 't')).toBe(1);
    await close();
  });

  it('delivers only the events a subscriber accepts; the others never count against its bound', async () => {
    const { pubsub, publishEvents, close } = await pubsubWithLimit(2);
    const kept = await pubsub.subscribe('audit', 't', { accept: (event) => event.auditId.startsWith('keep') });
    publishEvents(['other-1', 'keep-1', 'other-2', 'other-3', 'keep-2', 'other-4'].map((id) => auditEvent('t', id)));
    expect((await drain(kept, 2)).map((result: any) => result.value.auditId)).toEqual(['keep-1', 'keep-2']);
    expect(pubsub.subscriberCount('audit', 't')).toBe(1);
    await close();
  });

  it('ending a subscription detaches it and ends a pending read', async () => {
    const { pubsub, close } = await pubsubWithLimit(10);
    const runs = await pubsub.subscribe('run', 't');
    expect(pubsub.subscriberCount('run', 't')).toBe(1);
    const pending = runs.next();
    await runs.return!();
    expect(await pending).toEqual({ value: undefined, done: true });
    expect(pubsub.subscriberCount('run', 't')).toBe(0);
    await close();
  });

  it('closing the pub/sub tells open subscribers their stream was interrupted', async () => {
    const { pubsub, close } = await pubsubWithLimit(10);
    const runs = await pubsub.subscribe('run', 't');
    await close();
    expect((await runs.next()).value).toMatchObject({ reason: 'SERVER_STOPPING' });
    expect(await runs.next()).toEqual({ value: undefined, done: true });
  });

  describe('a subscriber whose token expires', () => {
    afterEach(() => vi.useRealTimers());

    it('is interrupted with TOKEN_EXPIRED at the expiry, even months away, and detached', async () => {
      vi.useFakeTimers({ now: new Date('2026-11-29T12:00:00Z') });
      const { pubsub, publishEvents, close } = await pubsubWithLimit(10);
      // Beyond setTimeout's longest delay (about 24.8 days).
      const endsAtMs = Date.parse('2027-02-27T12:00:00Z');
      const audits = await pubsub.subscribe('audit', 't', { endsAtMs });
      await vi.advanceTimersByTimeAsync(endsAtMs - Date.now() - 1);
      publishEvents([auditEvent('t', 'before')]);
      expect((await audits.next()).value).toMatchObject({ auditId: 'before' });

      await vi.advanceTimersByTimeAsync(1);
      expect((await audits.next()).value).toMatchObject({ reason: 'TOKEN_EXPIRED' });
      expect(await audits.next()).toEqual({ value: undefined, done: true });
      expect(pubsub.subscriberCount('audit', 't')).toBe(0);
      await close();
    });

    it('is not interrupted once it has ended for another reason', async () => {
      vi.useFakeTimers({ now: new Date('2026-11-29T12:00:00Z') });
      const { pubsub, close } = await pubsubWithLimit(10);
      const runs = await pubsub.subscribe('run', 't', { endsAtMs: Date.now() + 1000 });
      await runs.return!();
      expect(vi.getTimerCount()).toBe(0);
      await close();
    });
  });
});
