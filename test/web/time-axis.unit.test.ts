import { describe, expect, it } from 'vitest';
import { buildAxis, dateTimeLabel, gapsNear, formatAgo, layoutTimelineWithAxis, runLabel, shortId, type AuditView, type RunView } from '../../web/src/timeline.js';

// The page's time axis: idle gaps compressed and marked, a ruler on round clock times, zoom.

const T0 = Date.UTC(2026, 10, 30, 12, 0, 0);
const at = (ms: number) => new Date(T0 + ms).toISOString();
const run = (id: string, from: number, to: number, fields: Partial<RunView> = {}): RunView => ({
  id, status: 'COMPLETED', leaseOwner: null, leaseEpoch: 1, leaseExpiresAt: null, createdAt: at(from),
  startedAt: at(from), finishedAt: at(to), error: null, resumedFrom: null, ...fields,
});
const model = (id: string, runId: string, from: number, to: number): AuditView => ({
  __typename: 'ModelAudit', id, runId, operationId: id, sequence: String(from), finishedSequence: String(to),
  status: 'COMPLETED', startedAt: at(from), finishedAt: at(to), durationMs: to - from, error: null, model: 'm',
  inputBytes: null, outputBytes: null, errorBytes: null,
});

describe('the time axis', () => {
  // Two runs of 3 s, five minutes apart: on one linear scale each would be 1% of the axis.
  const runs = [run('01900000-0000-7000-8000-0000000000aa', 0, 3000), run('01900000-0000-7000-8000-0000000000bb', 303_000, 306_000)];
  // A run with audits is drawn over them (the runtime's clock): the same spans as the runs here.
  const audits = [
    model('m1', runs[0]!.id, 0, 1500), model('m1b', runs[0]!.id, 1600, 3000),
    model('m2', runs[1]!.id, 303_000, 304_500), model('m2b', runs[1]!.id, 304_600, 306_000),
  ];

  it('compresses the idle gap between runs minutes apart and marks it, so each run stays readable', () => {
    const { rows, axis } = layoutTimelineWithAxis(runs, audits, T0 + 400_000);
    const gaps = axis.pieces.filter((piece) => piece.gap);
    expect(gaps).toHaveLength(1);
    expect(gaps[0]).toMatchObject({ from: T0 + 3000, to: T0 + 303_000 });
    expect(gaps[0]!.width).toBeLessThanOrEqual(4);
    const [first, , , second] = rows;
    expect(first!.width).toBeGreaterThan(45);
    expect(second!.width).toBeGreaterThan(45);
    expect(second!.left).toBeGreaterThanOrEqual(first!.left + first!.width);
    // Audits keep their place within their run.
    const m2 = rows.find((row) => row.key === 'm2')!;
    expect(m2.left).toBeCloseTo(second!.left);
    expect(m2.left + m2.width).toBeLessThan(second!.left + second!.width);
  });

  it("draws a run with audits over its audits' observed times, not the server's claim and finish", () => {
    // The runtime observed its calls six minutes before the server recorded the claim and finish.
    const skewed = run('r', 400_000, 401_000);
    const { rows } = layoutTimelineWithAxis([skewed], [model('a', 'r', 10_000, 12_000)], T0 + 500_000);
    expect(rows[0]).toMatchObject({ start: T0 + 10_000, end: T0 + 12_000 });
  });

  it('keeps one linear scale when nothing is idle for long', () => {
    const axis = buildAxis([[T0, T0 + 10_000], [T0 + 11_000, T0 + 20_000]], T0);
    expect(axis.pieces.filter((piece) => piece.gap)).toEqual([]);
    expect(axis.position(T0 + 5000)).toBeCloseTo(25);
  });

  it('puts ticks on round clock times, in order, within the pieces drawn to scale', () => {
    const axis = buildAxis([[T0 + 120, T0 + 3_100], [T0 + 303_000, T0 + 306_000]], T0);
    expect(axis.ticks.length).toBeGreaterThanOrEqual(4);
    const lefts = axis.ticks.map((tick) => tick.left);
    expect(lefts).toEqual([...lefts].sort((a, b) => a - b));
    for (const tick of axis.ticks) {
      expect(tick.at % 100).toBe(0);
      const piece = axis.pieces.find((candidate) => !candidate.gap && tick.at >= candidate.from && tick.at <= candidate.to);
      expect(piece, tick.label).toBeDefined();
      expect(tick.label).toMatch(/^\d\d:\d\d:\d\d(\.\d{3})?$/);
    }
  });

  it('spaces the ruler labels by their width: none overlaps another or runs past the axis, no tick inside an idle gap, on short spans and narrow rulers', () => {
    const cases: (readonly (readonly [number, number])[])[] = [
      [[T0 + 120, T0 + 3_100], [T0 + 303_000, T0 + 306_000]],
      [[T0, T0 + 457]],
      [[T0, T0 + 2_500], [T0 + 60_000, T0 + 62_500], [T0 + 400_000, T0 + 400_900], [T0 + 900_000, T0 + 960_000]],
      [[T0, T0 + 3_600_000]],
    ];
    // Character shares of a ruler about 800, 500 and 300 px wide (1600, 1100 and a narrow window).
    for (const charShare of [0.8, 1.3, 2.2]) {
      for (const spans of cases) {
        const axis = buildAxis(spans, T0, null, charShare);
        const width = (label: string) => (label.length + 1) * charShare;
        expect(axis.ticks.length, JSON.stringify({ charShare, spans })).toBeGreaterThan(0);
        axis.ticks.forEach((tick, index) => {
          const end = tick.left + width(tick.label);
          expect(end).toBeLessThanOrEqual(100.01);
          const next = axis.ticks[index + 1];
          if (next) expect(end, `${tick.label} then ${next.label}`).toBeLessThanOrEqual(next.left);
          for (const gap of axis.pieces.filter((piece) => piece.gap)) expect(tick.left <= gap.left + 0.01 || tick.left >= gap.left + gap.width - 0.01).toBe(true);
        });
      }
    }
  });

  it("labels idle gaps apart: close together, only the longer gap's label; each within the axis; the bare length where the label does not fit", () => {
    // 10 s busy, 4 min 50 s idle, 100 ms busy, 5 min 5 s idle, 10 s busy: two gaps side by side.
    const spans = [[T0, T0 + 10_000], [T0 + 300_000, T0 + 300_100], [T0 + 605_100, T0 + 615_100]] as const;
    // Character shares of a ruler about 800 and 70 px wide.
    expect(buildAxis(spans, T0, null, 0.8).idleLabels).toEqual([expect.objectContaining({ label: '5 min 5 s idle' })]);
    expect(buildAxis(spans, T0, null, 9).idleLabels).toEqual([expect.objectContaining({ label: '5 min 5 s' })]);
    // A gap at the axis's end (a zoom) pulls its label back within the axis.
    const [end] = buildAxis([[T0, T0 + 10_000]], T0, { from: T0, to: T0 + 400_000 }, 0.8).idleLabels;
    expect(end!.left + end!.width).toBeLessThanOrEqual(100);
    expect(end!.label).toBe('6 min 30 s idle');
  });

  it("finds the idle gaps a tap meant: those within a fingertip of it, left to right, both of two side by side", () => {
    const spans = [[T0, T0 + 10_000], [T0 + 300_000, T0 + 300_100], [T0 + 605_100, T0 + 615_100]] as const;
    const axis = buildAxis(spans, T0);
    const [first, second] = axis.pieces.filter((piece) => piece.gap);
    const lengths = (at: number, rulerPx: number) => gapsNear(axis, at, rulerPx).map((gap) => gap.to - gap.from);
    // A ruler 90 px wide (a phone): the two gaps are 4 % (3.6 px) each, side by side.
    expect(lengths(first!.left + first!.width / 2, 90)).toEqual([290_000, 305_000]);
    // 1000 px wide: a tap on one is more than 12 px from the other.
    expect(lengths(first!.left + first!.width / 2, 1000)).toEqual([290_000]);
    expect(lengths(second!.left + second!.width + 1, 1000)).toEqual([305_000]);
    // Far from both: none.
    expect(lengths(99, 90)).toEqual([]);
  });

  it('maps a point of the axis back to its instant (drag to zoom)', () => {
    const axis = buildAxis([[T0, T0 + 3000], [T0 + 303_000, T0 + 306_000]], T0);
    for (const instant of [T0 + 1000, T0 + 2999, T0 + 304_000, T0 + 306_000]) {
      expect(axis.timeAt(axis.position(instant))).toBeCloseTo(instant, -1);
    }
  });

  it('zoomed into one run: that run fills the axis, the other is out of view', () => {
    const { rows } = layoutTimelineWithAxis(runs, audits, T0 + 400_000, { from: T0 + 303_000, to: T0 + 306_000 });
    const byKey = new Map(rows.map((row) => [row.key, row]));
    expect(byKey.get(runs[0]!.id)!.inView).toBe(false);
    expect(byKey.get('m1')!.inView).toBe(false);
    expect(byKey.get(runs[1]!.id)).toMatchObject({ inView: true, left: 0 });
    expect(byKey.get(runs[1]!.id)!.width).toBeCloseTo(100);
    expect(byKey.get('m2b')!.left).toBeCloseTo((1600 / 3000) * 100);
  });
});

describe('run labels', () => {
  it('tell apart runs created together: their order in the thread and the random tail of the UUIDv7', () => {
    const runs = [run('019a2329-4e10-7a31-9c2b-5d1e8f3a7c01', 0, 1), run('019a2329-4e10-7b02-8e44-90ab12cd34ef', 1, 2)];
    expect(runs.map((r) => runLabel(runs, r.id))).toEqual(['run 1 · 3a7c01', 'run 2 · cd34ef']);
    expect(layoutTimelineWithAxis(runs, [], T0).rows.map((row) => row.label)).toEqual(['run 1 · 3a7c01', 'run 2 · cd34ef']);
    expect(shortId('019a2329-4e10-7a31-9c2b-5d1e8f3a7c01')).toBe('3a7c01');
  });
});

describe('how long ago (the Activity view\'s recent failures)', () => {
  it('is said in its largest whole unit, up to the days of a week\'s window, never in the future', () => {
    const seconds = [0, 59.9, 60, 3599, 3600, 86_399, 86_400, 6.5 * 86_400, -2];
    expect(seconds.map((s) => formatAgo(s * 1000))).toEqual(['0 s ago', '59 s ago', '1 min ago', '59 min ago', '1 h ago', '23 h ago', '1 d ago', '6 d ago', '0 s ago']);
  });
});

describe('a moment in the details panel', () => {
  it('reads as a full local date and time to the millisecond, with its offset, so a debugger can match it with logs', () => {
    // Chromium printed only "218" for this when given nothing but fractionalSecondDigits.
    // The offset is the zone's (test/browser/postmortem.e2e.test.ts sets zones).
    const moment = new Date(2026, 10, 30, 14, 3, 27, 218);
    expect(dateTimeLabel(moment.toISOString())).toMatch(/^2026-11-30 14:03:27\.218 UTC([+-]\d\d:\d\d)?$/);
    expect(dateTimeLabel(new Date(2027, 0, 2, 3, 4, 5, 6).toISOString())).toMatch(/^2027-01-02 03:04:05\.006 UTC([+-]\d\d:\d\d)?$/);
    expect(dateTimeLabel(null)).toBe('—');
  });
});
