import { describe, expect, it } from 'vitest';
import { layoutTimeline, mergeAudit, mergeAudits, type AuditView, type RunView } from '../../web/src/timeline.js';

const at = (ms: number) => new Date(Date.UTC(2026, 10, 30, 12, 0, 0) + ms).toISOString();

const run = (id: string, fields: Partial<RunView> = {}): RunView => ({
  id, status: 'COMPLETED', leaseOwner: null, leaseEpoch: 1, leaseExpiresAt: null, createdAt: at(0),
  startedAt: at(0), finishedAt: at(1000), error: null, resumedFrom: null, ...fields,
});
const audit = (id: string, runId: string, sequence: number, fields: Partial<AuditView> = {}): AuditView => ({
  __typename: 'ModelAudit', id, runId, operationId: id, sequence: String(sequence), finishedSequence: null,
  status: 'COMPLETED', startedAt: at(sequence * 100), finishedAt: at(sequence * 100 + 50), durationMs: 50,
  error: null, inputBytes: null, outputBytes: null, errorBytes: null, ...fields,
});
const tool = (id: string, runId: string, sequence: number, declaredBy: string, fields: Partial<AuditView> = {}) =>
  audit(id, runId, sequence, { __typename: 'ToolAudit', name: id, toolCallId: id, declaredBy: { id: declaredBy }, ...fields });

describe('layoutTimeline', () => {
  it('nests each tool under its declaring model, across a resume, in run then sequence order', () => {
    const first = run('r1', { status: 'INTERRUPTED' });
    const second = run('r2', { createdAt: at(2000), startedAt: at(2000), finishedAt: at(3000), resumedFrom: { id: 'r1' } });
    const rows = layoutTimeline(
      [first, second],
      [
        tool('t-resumed', 'r2', 1, 'm1'), // sequence 1 of the resumed run: still after r1's tool
        audit('m2', 'r2', 2),
        audit('m1', 'r1', 1),
        tool('t-first', 'r1', 2, 'm1', { status: 'INTERRUPTED', error: { code: 'RUN_INTERRUPTED' } }),
      ],
      Date.parse(at(5000)),
    );
    expect(rows.map((row) => [row.key, row.depth])).toEqual([
      ['r1', 0], ['m1', 1], ['t-first', 2], ['t-resumed', 2], ['r2', 0], ['m2', 1],
    ]);
    expect(rows.find((row) => row.key === 't-resumed')!.ranInRun).toBe('r2');
    expect(rows.find((row) => row.key === 't-first')!.reason).toBe('RUN_INTERRUPTED');
  });

  it('shows a declared call that never started under its model call: pending while its run or a resume goes, never run once they ended', () => {
    const declared = (id: string, status = 'PENDING') => ({ id: `tc-${id}`, toolCallId: id, name: 'pay', status }) as NonNullable<AuditView['toolCalls']>[number];
    const calls = [declared('ran', 'COMPLETED'), declared('interrupted'), declared('skipped')];
    const audits = [
      audit('m1', 'r1', 1, { toolCalls: calls }),
      tool('ran', 'r1', 2, 'm1', { toolCall: { id: 'tc-ran', status: 'COMPLETED' } }),
      tool('interrupted', 'r1', 3, 'm1', { status: 'INTERRUPTED', toolCall: { id: 'tc-interrupted', status: 'PENDING' } }),
    ];
    const layout = (runs: RunView[]) => layoutTimeline(runs, audits, Date.parse(at(5000))).map((row) => [row.key, row.depth, row.status]);
    expect(layout([run('r1', { status: 'RUNNING', finishedAt: null })])).toEqual([
      ['r1', 0, 'RUNNING'], ['m1', 1, 'COMPLETED'], ['ran', 2, 'COMPLETED'], ['interrupted', 2, 'INTERRUPTED'], ['declared:tc-skipped', 2, 'PENDING'],
    ]);
    expect(layout([run('r1')]).at(-1)).toEqual(['declared:tc-skipped', 2, 'NEVER_RUN']);
    const resume = run('r2', { status: 'QUEUED', createdAt: at(2000), startedAt: null, finishedAt: null, resumedFrom: { id: 'r1' } });
    expect(layout([run('r1', { status: 'INTERRUPTED' }), resume]).find(([key]) => key === 'declared:tc-skipped')).toEqual(['declared:tc-skipped', 2, 'PENDING']);
    // A resume of a resume binds its tool starts through the whole ancestry: pending while it goes.
    const chain = (status: RunView['status']) => [
      run('r1', { status: 'INTERRUPTED' }),
      run('r2', { status: 'INTERRUPTED', createdAt: at(2000), resumedFrom: { id: 'r1' } }),
      run('r3', { status, createdAt: at(3000), finishedAt: status === 'RUNNING' ? null : at(4000), resumedFrom: { id: 'r2' } }),
    ];
    expect(layout(chain('RUNNING')).find(([key]) => key === 'declared:tc-skipped')).toEqual(['declared:tc-skipped', 2, 'PENDING']);
    expect(layout(chain('COMPLETED')).find(([key]) => key === 'declared:tc-skipped')).toEqual(['declared:tc-skipped', 2, 'NEVER_RUN']);
  });

  it('shows a declared call that ran in a resume not loaded under its model call, naming that run', () => {
    const calls = [{ id: 'tc-elsewhere', toolCallId: 'elsewhere', name: 'write_file', status: 'COMPLETED' }] as AuditView['toolCalls'];
    const summary = (audits: number) => ({ audits }) as RunView['auditSummary'];
    const runs = [
      run('r1', { status: 'INTERRUPTED', auditSummary: summary(1) }),
      run('r2', { createdAt: at(2000), resumedFrom: { id: 'r1' }, auditSummary: summary(3) }),
    ];
    const rows = layoutTimeline(runs, [audit('m1', 'r1', 1, { toolCalls: calls })], Date.parse(at(5000)));
    expect(rows.map((row) => [row.key, row.depth, row.status, row.ranInRun])).toEqual([
      ['r1', 0, 'INTERRUPTED', null], ['m1', 1, 'COMPLETED', null], ['declared:tc-elsewhere', 2, 'COMPLETED', 'r2'], ['r2', 0, 'COMPLETED', null],
    ]);
  });

  it('keeps a tool whose declaring model is not loaded (truncated) in its own run', () => {
    const rows = layoutTimeline([run('r1')], [tool('t', 'r1', 5, 'not-loaded')], Date.parse(at(5000)));
    expect(rows.map((row) => [row.key, row.depth])).toEqual([['r1', 0], ['t', 1]]);
  });

  it('ends a running bar at now, and always returns finite positions within the axis', () => {
    const now = Date.parse(at(4000));
    const rows = layoutTimeline(
      [run('r1', { status: 'RUNNING', finishedAt: null })],
      [
        audit('m1', 'r1', 1, { status: 'RUNNING', finishedAt: null, durationMs: null }),
        audit('broken', 'r1', 2, { startedAt: null, finishedAt: null, durationMs: null }),
      ],
      now,
    );
    const running = rows.find((row) => row.key === 'm1')!;
    expect(running.running).toBe(true);
    expect(running.durationMs).toBe(4000 - 100);
    expect(running.left + running.width).toBeCloseTo(100);
    for (const row of rows) {
      expect(Number.isFinite(row.left) && Number.isFinite(row.width)).toBe(true);
      expect(row.left).toBeGreaterThanOrEqual(0);
      expect(row.left + row.width).toBeLessThanOrEqual(100.0001);
    }
  });

  it('marks a bare tool error that waits for the run verdict, and does not count it as running', () => {
    const rows = layoutTimeline(
      [run('r1', { status: 'RUNNING', finishedAt: null })],
      [audit('m1', 'r1', 1), tool('t', 'r1', 2, 'm1', { status: 'RUNNING', awaitingRunTerminal: true, finishedSequence: '3', error: { message: 'boom' } })],
      Date.parse(at(2000)),
    );
    const row = rows.find((candidate) => candidate.key === 't')!;
    expect(row).toMatchObject({ awaitingVerdict: true, running: false, reason: 'boom' });
  });
});

describe('mergeAudit', () => {
  it('never moves an audit backwards when an older state arrives after a newer one', () => {
    const done = audit('m1', 'r1', 1, { status: 'COMPLETED', finishedSequence: '2' });
    const started = audit('m1', 'r1', 1, { status: 'RUNNING', finishedAt: null });
    expect(mergeAudit(mergeAudit(new Map(), done), started).get('m1')).toBe(done);
    expect(mergeAudit(mergeAudit(new Map(), started), done).get('m1')).toBe(done);
  });

  it('applies a burst of changes at once as one by one, the held map untouched', () => {
    const done = audit('m1', 'r1', 1, { status: 'COMPLETED', finishedSequence: '2' });
    const started = audit('m1', 'r1', 1, { status: 'RUNNING', finishedAt: null });
    const other = audit('t1', 'r1', 3);
    const held = new Map([['m1', started]]);
    const merged = mergeAudits(held, [done, other, started]);
    expect([...merged.values()]).toEqual([done, other]);
    expect(held.get('m1')).toBe(started);
  });
});
