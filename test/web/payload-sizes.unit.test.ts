import { describe, expect, it } from 'vitest';
import { formatBytes, layoutTimeline, type AuditView, type RunView } from '../../web/src/timeline.js';

// Payload sizes as the page shows them on a row, before the payloads are loaded.

const at = (ms: number) => new Date(Date.UTC(2026, 10, 30, 12) + ms).toISOString();
const run: RunView = {
  id: 'r1', status: 'COMPLETED', leaseOwner: null, leaseEpoch: 1, leaseExpiresAt: null, createdAt: at(0),
  startedAt: at(0), finishedAt: at(1000), error: null, resumedFrom: null,
};
const audit = (id: string, sizes: Pick<AuditView, 'inputBytes' | 'outputBytes' | 'errorBytes'>): AuditView => ({
  __typename: 'ToolAudit', id, runId: 'r1', operationId: id, sequence: id.slice(1), finishedSequence: null, status: 'COMPLETED',
  startedAt: at(10), finishedAt: at(20), durationMs: 10, error: null, name: 'fetch', ...sizes,
});

describe('payload sizes on timeline rows', () => {
  it('reads bytes in decimal units, two significant digits below ten', () => {
    expect([0, 512, 999, 1000, 1234, 12_345, 999_499, 1_048_576, 2_500_000_000].map(formatBytes)).toEqual([
      '0 B', '512 B', '999 B', '1.0 kB', '1.2 kB', '12 kB', '999 kB', '1.0 MB', '2.5 GB',
    ]);
  });

  it("shows each audit's present payloads, and none on a run", () => {
    const rows = layoutTimeline(
      [run],
      [
        audit('a1', { inputBytes: 17, outputBytes: 1_048_576, errorBytes: null }),
        audit('a2', { inputBytes: 2048, outputBytes: null, errorBytes: 90 }),
        audit('a3', { inputBytes: null, outputBytes: null, errorBytes: null }),
      ],
      Date.parse(at(5000)),
    );
    expect(rows.map((row) => [row.key, row.sizes])).toEqual([
      ['r1', null],
      ['a1', 'input 17 B · output 1.0 MB'],
      ['a2', 'input 2.0 kB · error 90 B'],
      ['a3', null],
    ]);
  });
});
