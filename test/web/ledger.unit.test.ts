import { describe, expect, it } from 'vitest';
import { buildLedger, filterLedger, type ToolCallView } from '../../web/src/ledger.js';
import type { AuditView, RunView } from '../../web/src/timeline.js';

// The tool-call ledger: every declared call, and the cases a debugger hunts for.

const NOW = Date.UTC(2026, 10, 30, 12);
const at = (ms: number) => new Date(NOW + ms).toISOString();
const run = (id: string, fields: Partial<RunView> = {}): RunView => ({
  id, status: 'RUNNING', leaseOwner: 'w', leaseEpoch: 1, leaseExpiresAt: at(20_000), createdAt: at(-1000),
  startedAt: at(-1000), finishedAt: null, error: null, resumedFrom: null, ...fields,
});
const call = (id: string, name: string, fields: Partial<ToolCallView> = {}): ToolCallView => ({
  id, toolCallId: `call-${id}`, name, status: 'PENDING', declaredInput: { q: 1 }, effectiveInput: null,
  startedAt: null, finishedAt: null, durationMs: null, ...fields,
});
const execution = (id: string, runId: string, toolCallRow: string, fields: Partial<AuditView> = {}): AuditView => ({
  __typename: 'ToolAudit', id, runId, operationId: id, sequence: '3', finishedSequence: null, status: 'RUNNING',
  startedAt: at(-500), finishedAt: null, durationMs: null, error: null, inputBytes: null, outputBytes: null, errorBytes: null, name: 'x', toolCall: { id: toolCallRow, status: 'RUNNING' }, ...fields,
});

describe('the tool-call ledger', () => {
  const runs = [run('r1', { status: 'INTERRUPTED', leaseExpiresAt: null, finishedAt: at(-600) }), run('r2', { resumedFrom: { id: 'r1' } })];
  const calls = new Map([
    ['r1', [
      call('a', 'search', { status: 'COMPLETED', effectiveInput: { q: 2 }, durationMs: 40 }),
      call('b', 'search', { status: 'COMPLETED', effectiveInput: { q: 1 } }),
      call('c', 'pay', { status: 'CANCELLED' }),
      call('d', 'pay', { status: 'RUNNING', effectiveInput: { q: 1 } }),
      call('e', 'mail', { status: 'RUNNING', effectiveInput: { q: 1 } }),
      call('f', 'mail', { status: 'PENDING' }),
    ]],
  ]);
  const audits = [
    execution('A', 'r1', 'a', { status: 'COMPLETED', durationMs: 42 }),
    execution('B', 'r1', 'b', { status: 'INTERRUPTED' }),
    // Ran in the resumed run, still running there.
    execution('D', 'r2', 'd'),
    execution('E', 'r2', 'e', { awaitingRunTerminal: true, finishedSequence: '4', error: { message: 'boom' } }),
  ];
  const entries = buildLedger(runs, calls, audits, NOW);

  it('lists every declared call with its status, duration, and whether its input differs from the declaration', () => {
    expect(entries.map((entry) => [entry.toolCallId, entry.status, entry.durationMs, entry.differs, entry.auditId])).toEqual([
      ['call-a', 'COMPLETED', 42, true, 'A'],
      ['call-b', 'INTERRUPTED', null, false, 'B'],
      ['call-c', 'CANCELLED', null, null, null],
      ['call-d', 'RUNNING', null, false, 'D'],
      ['call-e', 'RUNNING', null, false, 'E'],
      ['call-f', 'PENDING', null, null, null],
    ]);
  });

  it('marks the cases: never run, closed by the run end, awaiting the verdict, running with the lease left', () => {
    expect(Object.fromEntries(entries.map((entry) => [entry.toolCallId, entry.cases]))).toEqual({
      'call-a': [],
      'call-b': ['closed by run end'],
      'call-c': ['never run', 'closed by run end'],
      'call-d': ['running'],
      'call-e': ['awaiting verdict'],
      'call-f': ['never run'],
    });
    expect(entries.find((entry) => entry.toolCallId === 'call-d')!.leaseLeftMs).toBe(20_000);
    expect(entries.find((entry) => entry.toolCallId === 'call-e')!.leaseLeftMs).toBeNull();
  });

  it('filters by name, status and case', () => {
    const ids = (filter: { name?: string; status?: string; case?: string }) =>
      filterLedger(entries, { name: '', status: '', case: '', ...filter }).map((entry) => entry.toolCallId);
    expect(ids({ name: 'pay' })).toEqual(['call-c', 'call-d']);
    expect(ids({ status: 'RUNNING' })).toEqual(['call-d', 'call-e']);
    expect(ids({ case: 'never run' })).toEqual(['call-c', 'call-f']);
    expect(ids({ name: 'mail', case: 'awaiting verdict' })).toEqual(['call-e']);
  });
});
