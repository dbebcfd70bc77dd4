import { describe, expect, it } from 'vitest';
import { failuresText, layoutTimeline, type AuditSummary, type AuditView, type RunView } from '../../web/src/timeline.js';

// What the page says ended badly: per run, from the loaded entries when all are loaded, else from
// the server's counts (Run.auditSummary); a run's entries not loaded are counted and said.

const at = (ms: number) => new Date(Date.UTC(2026, 10, 30, 12, 0, 0) + ms).toISOString();
const summary = (fields: Partial<AuditSummary>): AuditSummary => ({
  audits: 0, modelCalls: 0, toolCalls: 0, modelsFailed: 0, toolsFailed: 0, toolsAbandoned: 0, toolsCancelled: 0, toolsInterrupted: 0,
  running: 0, firstStartedAt: null, lastFinishedAt: null, inputTokens: null, outputTokens: null, ...fields,
});
const run = (id: string, fields: Partial<RunView> = {}): RunView => ({
  id, status: 'COMPLETED', leaseOwner: null, leaseEpoch: 1, leaseExpiresAt: null, createdAt: at(0),
  startedAt: at(0), finishedAt: at(10_000), error: null, resumedFrom: null, ...fields,
});
const audit = (id: string, sequence: number, fields: Partial<AuditView> = {}): AuditView => ({
  __typename: 'ModelAudit', id, runId: 'r1', operationId: id, sequence: String(sequence), finishedSequence: null, model: 'gpt-x',
  status: 'COMPLETED', startedAt: at(sequence * 100), finishedAt: at(sequence * 100 + 50), durationMs: 50,
  error: null, inputBytes: null, outputBytes: null, errorBytes: null, ...fields,
});
const tool = (id: string, sequence: number, fields: Partial<AuditView> = {}) =>
  audit(id, sequence, { __typename: 'ToolAudit', name: 'pay', toolCallId: id, declaredBy: { id: 'm1' }, ...fields });

describe('failures at a glance', () => {
  it('names each kind of bad ending once, and nothing when all went well', () => {
    expect(failuresText(summary({ toolsFailed: 1, toolsAbandoned: 1 }))).toBe('1 tool failed, 1 abandoned');
    expect(failuresText(summary({ toolsFailed: 2, toolsCancelled: 1, toolsInterrupted: 3, modelsFailed: 1 }))).toBe('2 tools failed, 1 cancelled, 3 interrupted, 1 model call failed');
    expect(failuresText(summary({}))).toBeNull();
  });

  it("a COMPLETED run with its entries loaded: counted from them, the failing rows marked, the error's first line", () => {
    const rows = layoutTimeline(
      [run('r1', { auditSummary: summary({ audits: 3 }) })],
      [audit('m1', 1), tool('bad', 2, { status: 'FAILED', error: { message: 'permission denied\n  at pay (pay.ts:1)' } }), tool('hung', 3, { status: 'ABANDONED' })],
      Date.parse(at(20_000)),
    );
    const byKey = new Map(rows.map((row) => [row.key, row]));
    expect(byKey.get('r1')).toMatchObject({ failures: '1 tool failed, 1 abandoned', failed: false, unloaded: 0 });
    expect(byKey.get('bad')).toMatchObject({ failed: true, reason: 'permission denied' });
    expect(byKey.get('hung')!.failed).toBe(true);
    expect(byKey.get('m1')).toMatchObject({ failed: false, label: 'gpt-x · call 1' });
  });

  it("a run with entries not loaded: the server's counts, span and tokens, and how many are missing", () => {
    const rows = layoutTimeline(
      [run('r1', { auditSummary: summary({ audits: 40, toolsFailed: 1, firstStartedAt: at(0), lastFinishedAt: at(2500), inputTokens: '900', outputTokens: '90' }) })],
      [audit('m1', 20, { usage: { input_tokens: 10, output_tokens: 1 } })],
      Date.parse(at(20_000)),
    );
    expect(rows[0]).toMatchObject({ failures: '1 tool failed', failed: true, unloaded: 39, durationMs: 2500, tokens: { input: 900, output: 90 } });
    expect(rows[1]!.label).toBe('gpt-x · call …1');
  });
});
