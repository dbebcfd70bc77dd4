import { describe, expect, it } from 'vitest';
import { leaseLeftMs, rowToOpen, shownDurationMs, type LedgerEntry } from '../../web/src/ledger.js';

// The page's formatting of the server's ledger entries (the cases themselves are the server's:
// test/reads/tool-call-ledger.int.test.ts).

const NOW = Date.UTC(2026, 10, 30, 12);
const at = (ms: number) => new Date(NOW + ms).toISOString();
const entry = (fields: Partial<LedgerEntry> = {}): LedgerEntry => ({
  id: 'tc', threadId: 'th', threadTitle: 't', runId: 'r1', declaredById: 'model-1', executedInRunId: null, auditId: null,
  toolCallId: 'call-1', name: 'search', declaredInput: { q: 1 }, effectiveInput: null, inputDiffers: null,
  status: 'PENDING', startedAt: null, finishedAt: null, durationMs: null, cases: ['NEVER_RUN'], leaseExpiresAt: null, ...fields,
});

describe('the tool-call ledger on the page', () => {
  it('counts the lease down while a call runs, and below zero once it expired', () => {
    expect(leaseLeftMs(entry({ cases: ['RUNNING'], leaseExpiresAt: at(20_000) }), NOW)).toBe(20_000);
    expect(leaseLeftMs(entry({ cases: ['RUNNING'], leaseExpiresAt: at(-1000) }), NOW)).toBe(-1000);
    expect(leaseLeftMs(entry(), NOW)).toBeNull();
  });

  it('shows the measured duration, else the time since a running call started', () => {
    expect(shownDurationMs(entry({ status: 'COMPLETED', durationMs: 40, cases: [] }), NOW)).toBe(40);
    expect(shownDurationMs(entry({ status: 'RUNNING', startedAt: at(-1500), cases: ['RUNNING'] }), NOW)).toBe(1500);
    // A bare error awaiting the verdict is not running on: no clock.
    expect(shownDurationMs(entry({ status: 'RUNNING', startedAt: at(-1500), cases: ['AWAITING_VERDICT'] }), NOW)).toBeNull();
    expect(shownDurationMs(entry(), NOW)).toBeNull();
  });

  it("opens the execution, else the call's own row under the model call that declared it", () => {
    expect(rowToOpen(entry({ auditId: 'tool-1' }))).toBe('tool-1');
    expect(rowToOpen(entry())).toBe('declared:tc');
  });
});
