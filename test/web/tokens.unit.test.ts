import { describe, expect, it } from 'vitest';
import { layoutTimeline, type AuditView, type RunView } from '../../web/src/timeline.js';

// Token usage as the page shows it: per model call, summed per run.

const at = (ms: number) => new Date(Date.UTC(2026, 10, 30, 12) + ms).toISOString();
const run = (id: string): RunView => ({
  id, status: 'COMPLETED', leaseOwner: null, leaseEpoch: 1, leaseExpiresAt: null, createdAt: at(0),
  startedAt: at(0), finishedAt: at(1000), error: null, resumedFrom: null,
});
const model = (id: string, runId: string, usage: unknown): AuditView => ({
  __typename: 'ModelAudit', id, runId, operationId: id, sequence: id.slice(1), finishedSequence: null, status: 'COMPLETED',
  startedAt: at(10), finishedAt: at(20), durationMs: 10, error: null, usage,
  inputBytes: null, outputBytes: null, errorBytes: null,
});

describe('token usage', () => {
  it("gives each model call its usage and each run the sum of its model calls'", () => {
    const rows = layoutTimeline(
      [run('r1'), run('r2')],
      [model('m1', 'r1', { input_tokens: 100, output_tokens: 10 }), model('m2', 'r1', { prompt_tokens: 50, completion_tokens: 5 }), model('m3', 'r1', null), model('m4', 'r2', null)],
      Date.parse(at(5000)),
    );
    expect(rows.map((row) => [row.key, row.tokens])).toEqual([
      ['r1', { input: 150, output: 15 }],
      ['m1', { input: 100, output: 10 }],
      ['m2', { input: 50, output: 5 }],
      ['m3', null],
      ['r2', null],
      ['m4', null],
    ]);
  });
});
