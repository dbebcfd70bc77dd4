// The timeline's data and its one pure layout function: no DOM, no network.
import type { PageAuditFieldsFragment, PageAuditSummaryFragment, PageRunFieldsFragment } from './generated/graphql/graphql.js';
import { addTokens, tokensOf, type Tokens } from '../../src/shared/llm-payloads.js';

export { addTokens, tokensOf, type Tokens };

/** A run as the page reads it (PageRunFields in queries.ts); a run from a fixture may lack its summary. */
export type RunView = Omit<PageRunFieldsFragment, 'auditSummary'> & { auditSummary?: AuditSummary | null };
export type AuditSummary = PageAuditSummaryFragment;
/** The counts of what ended badly, as AuditSummary names them. */
export type FailureCounts = Pick<AuditSummary, 'modelsFailed' | 'toolsFailed' | 'toolsAbandoned' | 'toolsCancelled' | 'toolsInterrupted'>;

/** "1 tool failed, 1 abandoned, 1 model call failed": what ended badly; null when nothing did. */
export function failuresText(counts: FailureCounts): string | null {
  const parts = [
    counts.toolsFailed && `${counts.toolsFailed} tool${counts.toolsFailed === 1 ? '' : 's'} failed`,
    counts.toolsAbandoned && `${counts.toolsAbandoned} abandoned`,
    counts.toolsCancelled && `${counts.toolsCancelled} cancelled`,
    counts.toolsInterrupted && `${counts.toolsInterrupted} interrupted`,
    counts.modelsFailed && `${counts.modelsFailed} model call${counts.modelsFailed === 1 ? '' : 's'} failed`,
  ].filter(Boolean);
  return parts.length ? parts.join(', ') : null;
}

const BAD_AUDIT_STATUSES = ['FAILED', 'ABANDONED', 'CANCELLED', 'INTERRUPTED'];
/** An audit that ended badly, or a bare tool error still awaiting its run's verdict. */
export const auditFailed = (audit: Pick<AuditView, 'status' | 'awaitingRunTerminal'>) => BAD_AUDIT_STATUSES.includes(audit.status) || Boolean(audit.awaitingRunTerminal);

/** The failure counts of loaded audits, as the server counts them (AuditSummary). */
function countFailures(audits: readonly AuditView[]): FailureCounts {
  const counts: FailureCounts = { modelsFailed: 0, toolsFailed: 0, toolsAbandoned: 0, toolsCancelled: 0, toolsInterrupted: 0 };
  for (const audit of audits) {
    if (audit.__typename === 'ModelAudit') counts.modelsFailed += audit.status === 'FAILED' ? 1 : 0;
    else if (audit.status === 'FAILED') counts.toolsFailed++;
    else if (audit.status === 'ABANDONED') counts.toolsAbandoned++;
    else if (audit.status === 'CANCELLED') counts.toolsCancelled++;
    else if (audit.status === 'INTERRUPTED') counts.toolsInterrupted++;
  }
  return counts;
}

type AllKeys<T> = T extends unknown ? keyof T : never;
type ValueOf<T, K extends PropertyKey> = T extends unknown ? (K extends keyof T ? T[K] : never) : never;
/** A union's members as one object: the fields they share, and each member's own ones as optional. */
type Flat<T> = Pick<T, keyof T> & { [K in Exclude<AllKeys<T>, keyof T>]?: ValueOf<T, K> };

/** An audit as a timeline row shows it (PageAuditFields in queries.ts): a model call's or a tool's fields are set on its own kind only. */
export type AuditView = Flat<PageAuditFieldsFragment>;

/** "512 B", "1.2 kB", "12 kB", "3.4 MB": decimal units, two significant digits below ten. */
export function formatBytes(bytes: number): string {
  const units = ['B', 'kB', 'MB', 'GB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return `${unit === 0 || value >= 10 ? Math.round(value) : value.toFixed(1)} ${units[unit]}`;
}

/** What an audit's payloads weigh, from the sizes the summary carries (the payloads load on opening a row). */
export function payloadSizes(audit: { inputBytes?: number | null; outputBytes?: number | null; errorBytes?: number | null }): string | null {
  const parts = (
    [
      ['input', audit.inputBytes],
      ['output', audit.outputBytes],
      ['error', audit.errorBytes],
    ] as const
  ).flatMap(([label, bytes]) => (bytes == null ? [] : [`${label} ${formatBytes(bytes)}`]));
  return parts.length ? parts.join(' · ') : null;
}

/**
 * A payload as the details panel shows it: indented JSON whose strings keep their line breaks as
 * lines (a log reads as its lines, not as one string of "\n"), a string payload as its text, and a
 * string holding a JSON object or array (a tool's content, often) as that JSON, indented, as
 * Langfuse shows it, unless parsing would change one of its numbers (parsedJson).
 * For 300 kB it costs milliseconds: one stringify, one pass of a regular expression.
 */
export function payloadText(value: unknown): string {
  // A string payload (an error's text, say) is shown as its text.
  const shown = typeof value === 'string' ? (parsedJson(value) ?? value) : value;
  if (typeof shown === 'string') return shown;
  const text = JSON.stringify(shown, (_key, item: unknown) => (typeof item === 'string' ? (parsedJson(item) ?? item) : item), 2) ?? String(shown);
  // In JSON text a backslash only ever starts an escape: matched left to right, `\\` is one escape
  // (a backslash) and never the start of `\n`.
  return text.replace(/\\(?:r\\n|n|\\)/g, (escape) => (escape === '\\\\' ? escape : '\n'));
}

/**
 * Characters that draw nothing or reorder the text around them: Unicode's default-ignorable code
 * points (bidi controls, zero-width and other format characters, fillers, variation selectors,
 * and the astral tag characters, which can carry a whole hidden sentence after visible text).
 * Left in the page they would act ("Trojan Source": U+202E shows "evil" as "live") or hide text,
 * so they are shown as marks instead; all but an emoji's presentation selector (U+FE0E, U+FE0F),
 * which is how "☀️" is drawn.
 */
const INVISIBLE = /(?![\uFE0E\uFE0F])\p{Default_Ignorable_Code_Point}/u;

/** The mark shown for an invisible character: "⟨U+202E⟩". */
const invisibleMark = (char: string) => `⟨U+${char.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}⟩`;

/** `text` cut into pieces: plain text, and each invisible character as its mark (`mark: true`). */
export function revealInvisible(text: string): { text: string; mark: boolean }[] {
  return text.split(new RegExp(`(${INVISIBLE.source})`, 'u')).flatMap((piece, index) =>
    piece === '' ? [] : [index % 2 ? { text: invisibleMark(piece), mark: true } : { text: piece, mark: false }],
  );
}

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/**
 * Up to 60 characters around the first match of `text` (any case), else the start: characters
 * as the server's snippets count them (code points), cut as the server cuts them, between
 * grapheme clusters, so an emoji sequence (👨‍👩‍👧, a flag) is never cut in two.
 */
export function snippetOf(value: string, text: string): string {
  const at = text ? value.toLowerCase().indexOf(text.toLowerCase()) : -1;
  const pieces = [...graphemes.segment(value)].map(({ segment, index }) => ({ segment, index, size: [...segment].length }));
  let from = at < 0 ? 0 : Math.max(0, pieces.findIndex((piece) => piece.index + piece.segment.length > at));
  for (let lead = 0; at >= 0 && from > 0 && lead + pieces[from - 1]!.size <= 25; ) lead += pieces[--from]!.size;
  let to = from;
  for (let used = 0; to < pieces.length && used + pieces[to]!.size <= 60; ) used += pieces[to++]!.size;
  return `${from > 0 ? '…' : ''}${pieces.slice(from, to).map((piece) => piece.segment).join('')}${to < pieces.length ? '…' : ''}`;
}

/** `text` with its invisible characters as marks: for where the page cannot draw a mark (a title, an aria-label). */
export const markedText = (text: string): string => text.replace(new RegExp(INVISIBLE.source, 'gu'), invisibleMark);

/** A JSON value whose strings show their invisible characters as marks (for views drawing HTML of their own). */
export function withInvisibleMarked(value: unknown): unknown {
  if (typeof value === 'string') return markedText(value);
  if (Array.isArray(value)) return value.map(withInvisibleMarked);
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([key, item]) => [withInvisibleMarked(key), withInvisibleMarked(item)]));
  return value;
}

/**
 * The JSON object or array a string holds, if it holds one whose numbers parsing keeps: one that
 * rounds (12345678901234567890), overflows (1e400 shows as null) or loses its sign (-0) leaves
 * the string shown as written.
 */
function parsedJson(text: string): object | undefined {
  if (!/^\s*[[{]/.test(text)) return undefined;
  let parsed: object;
  try {
    parsed = JSON.parse(text) as object;
  } catch {
    return undefined;
  }
  // Valid JSON, so a number is any match outside a string.
  for (const [token] of text.matchAll(/"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g)) {
    if (!token.startsWith('"') && decimal(token) !== decimal(JSON.stringify(Number(token)))) return undefined;
  }
  return parsed;
}

/** A JSON number's exact value as sign, significant digits and exponent ("21.0" and "21" alike); null is no number. */
function decimal(token: string): string | null {
  const parts = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(token);
  if (!parts) return null;
  const [, sign, whole, fraction = '', exponent = '0'] = parts;
  const digits = whole! + fraction;
  const significant = digits.replace(/^0+/, '').replace(/0+$/, '');
  if (!significant) return `${sign}0`;
  return `${sign}${significant}e${Number(exponent) + whole!.length - (digits.length - digits.replace(/^0+/, '').length)}`;
}

/** Closed audits never change again; a bare error is further along than a plain start. */
const auditProgress = (audit: AuditView) => (audit.status !== 'RUNNING' ? 2 : audit.finishedSequence !== null ? 1 : 0);
const runProgress = (run: RunView) =>
  run.status === 'QUEUED' ? 0 : run.status === 'RUNNING' ? 1 + run.leaseEpoch : Number.MAX_SAFE_INTEGER;

/**
 * Applies a delivered or re-read audit by id. A delivery that overtook a newer read never moves
 * an audit backwards, so snapshots and live events may arrive in any order.
 */
export function mergeAudit(audits: ReadonlyMap<string, AuditView>, audit: AuditView): Map<string, AuditView> {
  return mergeAudits(audits, [audit]);
}

/** `mergeAudit` of many at once: one copy of the map, however many there are. */
export function mergeAudits(audits: ReadonlyMap<string, AuditView>, items: Iterable<AuditView>): Map<string, AuditView> {
  const next = new Map(audits);
  for (const audit of items) {
    const held = next.get(audit.id);
    if (!held || auditProgress(audit) >= auditProgress(held)) next.set(audit.id, audit);
  }
  return next;
}

/** `runs` with `items` merged in, each kept only if it is no older than the one held. */
export function mergeRuns(runs: ReadonlyMap<string, RunView>, items: Iterable<RunView>): Map<string, RunView> {
  const next = new Map(runs);
  for (const run of items) {
    const held = next.get(run.id);
    if (!held || runProgress(run) >= runProgress(held)) next.set(run.id, run);
  }
  return next;
}

export type RowKind = 'run' | 'model' | 'tool';

export interface Row {
  key: string;
  kind: RowKind;
  depth: number;
  label: string;
  status: string;
  running: boolean;
  /** Bar position on the shared axis, in percent, always finite and within 0..100. */
  left: number;
  width: number;
  /** Wall-clock milliseconds (to `now` while running); the backend's durationMs when it has one. */
  durationMs: number | null;
  /** A bare tool error whose run has not given its verdict yet. */
  awaitingVerdict: boolean;
  /** Why an audit or run was closed (abandoned, interrupted, cancelled, failed). */
  reason: string | null;
  /** A model call's token usage; a run's, the sum of its model calls'. */
  tokens: Tokens | null;
  /** An audit's payload sizes, "input 12 kB · output 1.2 MB" (absent payloads left out). */
  sizes: string | null;
  /** The run a tool ran in, when that is not the run of the model that declared it (a resume). */
  ranInRun: string | null;
  run?: RunView;
  audit?: AuditView;
  /** The span in epoch milliseconds (NaN when unknown). */
  start: number;
  end: number;
  /** Some of the span lies within the axis shown (always, unless zoomed). */
  inView: boolean;
  /** A run's "1 tool failed, 1 abandoned" (from the server's counts until all its entries are loaded). */
  failures: string | null;
  /** This row is one the failure keys stop at: an audit that ended badly, a FAILED run, a run holding failures not loaded. */
  failed: boolean;
  /** A run's entries the server holds that are not loaded (0 for audits). */
  unloaded: number;
  /** A tool call its model declared with no execution loaded: never started (status PENDING or NEVER_RUN), or ran in a run not loaded. */
  declared?: DeclaredCall;
}

/** A tool call as its declaring model call lists it (ModelAudit.toolCalls). */
export type DeclaredCall = NonNullable<AuditView['toolCalls']>[number];

/** The row of a declared call that never started, by the ToolCall's id. */
export const declaredRowKey = (toolCallId: string) => `declared:${toolCallId}`;
export const isDeclaredRowKey = (key: string) => key.startsWith('declared:');

type RowBase = Omit<Row, 'left' | 'width' | 'start' | 'end' | 'inView'>;

const time = (value: string | null | undefined) => (value ? Date.parse(value) : NaN);

/** Why a row closed, on one line: the error's code and the first line of its message. */
function reasonOf(error: unknown): string | null {
  if (error == null) return null;
  if (typeof error === 'string') return firstLine(error);
  if (typeof error === 'object') {
    const { code, type, reason, message } = error as Record<string, unknown>;
    const parts = [code ?? type, reason, message].filter((part) => typeof part === 'string');
    if (parts.length) return firstLine(parts.join(': '));
  }
  return JSON.stringify(error);
}

const firstLine = (text: string) => text.trim().split('\n', 1)[0]!;

const bySequence = (a: AuditView, b: AuditView) => {
  const diff = BigInt(a.sequence) - BigInt(b.sequence);
  if (diff !== 0n) return diff < 0n ? -1 : 1;
  if (a.__typename !== b.__typename) return a.__typename === 'ModelAudit' ? -1 : 1;
  return a.id < b.id ? -1 : 1;
};

/** A readable short id: the random tail of a UUIDv7 (its head is the creation time, alike for runs made together). */
export const shortId = (id: string) => id.replace(/-/g, '').slice(-6);

/** "run 3 · 9f2c1a": the run's place in the thread (creation order, from 1) and its short id. */
export function runLabel(runs: readonly RunView[], runId: string): string {
  const index = runs.findIndex((run) => run.id === runId);
  return index < 0 ? `run ${shortId(runId)}` : `run ${index + 1} · ${shortId(runId)}`;
}

/** A span of time to show, in epoch milliseconds (a zoom). */
export interface TimeWindow {
  from: number;
  to: number;
}

/** A part of the axis: time drawn to scale, or an idle gap drawn narrow (`gap`). Percent of the axis width. */
export interface AxisPiece {
  from: number;
  to: number;
  left: number;
  width: number;
  gap: boolean;
}

export interface Tick {
  at: number;
  left: number;
  label: string;
}

/** An idle gap's label on the ruler ("6 min 2 s idle"); `left` and `width` in percent of the axis. */
export interface IdleLabel {
  left: number;
  width: number;
  label: string;
}

export interface Axis {
  from: number;
  to: number;
  pieces: AxisPiece[];
  ticks: Tick[];
  /**
   * The idle gaps' labels that fit, left to right (a gap without one gives its length on hover,
   * and the ruler's row on a tap: gapsNear).
   */
  idleLabels: IdleLabel[];
  /** Where an instant sits on the axis, in percent (0..100, clamped). */
  position(at: number): number;
  /** The instant at a point of the axis (percent): position's inverse. */
  timeAt(left: number): number;
}

/** The share of the axis one compressed idle gap takes, and what all of them may take at most. */
const GAP_SHARE = 4;
const MAX_GAPS_SHARE = 30;
/** An idle stretch is compressed when longer than this and than a quarter of the busy time shown. */
const MIN_GAP_MS = 2000;

/** One label character's share of the axis for a ruler about 800 px wide (11 px digits). */
export const DEFAULT_CHAR_SHARE = 0.8;
/** An idle label's character against a clock digit: the ruler draws them at 10 px and 11 px. */
const IDLE_CHAR = 10 / 11;

const TICK_STEPS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 15e3, 3e4, 6e4, 12e4, 3e5, 6e5, 9e5, 18e5, 36e5, 72e5, 216e5, 432e5, 864e5];

const pad = (n: number, width = 2) => String(n).padStart(width, '0');
/** Local clock time: "14:03:27", with milliseconds when ticks are closer than a second. */
export function clockLabel(at: number, withMs: boolean): string {
  const d = new Date(at);
  const base = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  return withMs ? `${base}.${pad(d.getMilliseconds(), 3)}` : base;
}

/**
 * A moment as a debugger quotes it, in local time with its offset, so a reader in another zone
 * reads the same moment: "2026-11-30 14:03:27.218 UTC+01:00" ("UTC" alone at offset 0); "—" for none.
 */
export function dateTimeLabel(value: string | null | undefined): string {
  if (!value) return '—';
  const d = new Date(value);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${clockLabel(d.getTime(), true)} ${utcOffsetLabel(d)}`;
}

/** The local zone's offset from UTC at a moment, as dateTimeLabel ends: "UTC+01:00", "UTC-05:00", "UTC" at 0. */
export function utcOffsetLabel(at: Date | string): string {
  const east = -new Date(at).getTimezoneOffset();
  return east === 0 ? 'UTC' : `UTC${east > 0 ? '+' : '-'}${pad(Math.floor(Math.abs(east) / 60))}:${pad(Math.abs(east) % 60)}`;
}

/**
 * The time axis of a set of spans: idle stretches between them (no run or audit busy) longer
 * than MIN_GAP_MS and a quarter of the busy time are each drawn GAP_SHARE percent wide and marked,
 * the rest to one scale, so runs minutes or hours apart each stay readable. With a window, only
 * that span is shown. Ticks fall on round clock times within the pieces drawn to scale, as many
 * as their labels fit without overlapping: `charShare` is the percent of the axis one character
 * of a label takes (the page measures its ruler; 1100 px wide windows make it larger).
 */
export function buildAxis(spans: readonly (readonly [number, number])[], now: number, window: TimeWindow | null = null, charShare = DEFAULT_CHAR_SHARE): Axis {
  const finite = spans.filter(([a, b]) => Number.isFinite(a) && Number.isFinite(b)).map(([a, b]) => [a, Math.max(a, b)] as const);
  const from = window?.from ?? (finite.length ? Math.min(...finite.map(([a]) => a)) : now);
  let to = window?.to ?? (finite.length ? Math.max(...finite.map(([, b]) => b)) : now);
  if (!(to > from)) to = from + 1;
  // The busy stretches within the window, merged.
  const busy: [number, number][] = [];
  for (const [a, b] of finite.map(([a, b]) => [Math.max(a, from), Math.min(b, to)] as const).filter(([a, b]) => b >= a).sort((x, y) => x[0] - y[0])) {
    const last = busy[busy.length - 1];
    if (last && a <= last[1]) last[1] = Math.max(last[1], b);
    else busy.push([a, b]);
  }
  const busyMs = busy.reduce((sum, [a, b]) => sum + (b - a), 0);
  const threshold = Math.max(MIN_GAP_MS, busyMs / 4);
  const gaps: [number, number][] = [];
  const edges = [[from, from] as const, ...busy, [to, to] as const];
  for (let i = 1; i < edges.length; i++) {
    const [gapFrom, gapTo] = [edges[i - 1]![1], edges[i]![0]];
    if (gapTo - gapFrom > threshold) gaps.push([gapFrom, gapTo]);
  }
  const gapShare = gaps.length ? Math.min(GAP_SHARE, MAX_GAPS_SHARE / gaps.length) : 0;
  const scaledMs = to - from - gaps.reduce((sum, [a, b]) => sum + (b - a), 0);
  const scaledShare = 100 - gapShare * gaps.length;
  const pieces: AxisPiece[] = [];
  let left = 0;
  let cursor = from;
  const add = (pieceFrom: number, pieceTo: number, gap: boolean) => {
    const width = gap ? gapShare : scaledMs > 0 ? (scaledShare * (pieceTo - pieceFrom)) / scaledMs : 0;
    if (pieceTo > pieceFrom || gap) pieces.push({ from: pieceFrom, to: pieceTo, left, width, gap });
    left += width;
  };
  for (const [gapFrom, gapTo] of gaps) {
    add(cursor, gapFrom, false);
    add(gapFrom, gapTo, true);
    cursor = gapTo;
  }
  add(cursor, to, false);
  if (!pieces.length) pieces.push({ from, to, left: 0, width: 100, gap: false });

  const position = (at: number) => {
    if (!Number.isFinite(at) || at <= from) return 0;
    if (at >= to) return 100;
    const piece = pieces.find((candidate) => at <= candidate.to) ?? pieces[pieces.length - 1]!;
    const span = piece.to - piece.from;
    return Math.min(100, Math.max(0, piece.left + (span > 0 ? (piece.width * (at - piece.from)) / span : 0)));
  };

  const timeAt = (at: number) => {
    const piece = pieces.find((candidate) => at <= candidate.left + candidate.width) ?? pieces[pieces.length - 1]!;
    return piece.width > 0 ? piece.from + ((Math.min(Math.max(at, piece.left), piece.left + piece.width) - piece.left) / piece.width) * (piece.to - piece.from) : piece.from;
  };

  // A label takes its characters and a gap after it; with milliseconds it is longer.
  const labelShare = (withMs: boolean) => (withMs ? 13 : 9) * charShare;
  const ticks: Tick[] = [];
  for (const piece of pieces) {
    if (piece.gap || piece.width < labelShare(false)) continue;
    // The smallest round step whose labels fit side by side (a step under a second labels longer).
    const stepFor = (withMs: boolean) => {
      const wanted = ((piece.to - piece.from) * labelShare(withMs)) / piece.width;
      return TICK_STEPS.find((candidate) => candidate >= wanted) ?? TICK_STEPS[TICK_STEPS.length - 1]!;
    };
    const fine = stepFor(true);
    const step = fine < 1000 ? fine : Math.max(1000, stepFor(false));
    const share = labelShare(step < 1000);
    for (let at = Math.ceil(piece.from / step) * step; at <= piece.to; at += step) {
      const left = position(at);
      const previous = ticks[ticks.length - 1];
      // A label never runs past the axis or into the label before it (it may run over an idle
      // gap's stripes: the gap's own label sits below it).
      if (left + share > 100.01 || (previous && previous.left + labelShare(previous.label.length > 8) > left)) continue;
      ticks.push({ at, left, label: clockLabel(at, step < 1000) });
    }
  }
  // Idle labels sit below the clock times, each from its gap's start, pulled back to end within
  // the axis; the longest gap's first, then each that overlaps none placed ("6 min 2 s idle", else
  // the bare "6 min 2 s"): gaps close together would draw their labels over one another.
  const idleLabels: IdleLabel[] = [];
  for (const piece of pieces.filter((candidate) => candidate.gap).sort((a, b) => b.to - b.from - (a.to - a.from))) {
    const duration = formatDuration(piece.to - piece.from);
    for (const label of [`${duration} idle`, duration]) {
      const width = label.length * charShare * IDLE_CHAR;
      const left = Math.max(0, Math.min(piece.left, 100 - width));
      if (width > 100 || idleLabels.some((placed) => left < placed.left + placed.width && placed.left < left + width)) continue;
      idleLabels.push({ left, width, label });
      break;
    }
  }
  idleLabels.sort((a, b) => a.left - b.left);
  return { from, to, pieces, ticks, idleLabels, position, timeAt };
}

/**
 * The idle gaps a tap at `at` (percent of the axis) on a ruler `rulerPx` wide may have meant,
 * left to right: those within `reachPx` of it (a fingertip; gaps close together may be a few
 * pixels wide each, side by side).
 */
export function gapsNear(axis: Axis, at: number, rulerPx: number, reachPx = 12): AxisPiece[] {
  return axis.pieces.filter((piece) => piece.gap && (Math.max(0, piece.left - at, at - (piece.left + piece.width)) * rulerPx) / 100 <= reachPx);
}

export interface Timeline {
  rows: Row[];
  axis: Axis;
}

/**
 * The whole timeline as one flat list of rows: each run (in creation order), its model calls in
 * sequence order, each followed by the tool executions it declared, wherever they ran (a resumed
 * run's tools sit under the model of the run that declared them). Tools whose declaring model is
 * not loaded (a truncated timeline) follow in their own run. A missing end means `now`. Bars sit
 * on the axis of all rows' spans (or of `window`); a row wholly outside the window is not `inView`.
 */
export function layoutTimelineWithAxis(
  runs: readonly RunView[],
  audits: Iterable<AuditView>,
  now: number,
  window: TimeWindow | null = null,
  charShare = DEFAULT_CHAR_SHARE,
): Timeline {
  const runIndex = new Map(runs.map((run, index) => [run.id, index]));
  // The server's order: run creation, then sequence.
  const all = [...audits].sort((a, b) => (runIndex.get(a.runId) ?? -1) - (runIndex.get(b.runId) ?? -1) || bySequence(a, b));
  const models = new Set(all.filter((a) => a.__typename === 'ModelAudit').map((a) => a.id));
  const toolsByModel = new Map<string, AuditView[]>();
  for (const audit of all) {
    const modelId = audit.declaredBy?.id;
    if (audit.__typename === 'ToolAudit' && modelId && models.has(modelId)) {
      const list = toolsByModel.get(modelId);
      if (list) list.push(audit);
      else toolsByModel.set(modelId, [audit]);
    }
  }
  // Declared calls with an execution loaded; the others never started, or ran where they are not
  // loaded (a call whose ToolCall moved on from PENDING ran somewhere: a resume not read yet).
  const started = new Set(all.flatMap((audit) => (audit.toolCall ? [audit.toolCall.id] : [])));
  const going = (run: RunView) => run.status === 'QUEUED' || run.status === 'RUNNING';
  // A run's declared calls may still start while it or a resume of it at any depth goes (a tool
  // start binds through the whole resume ancestry): every going run and all its ancestors. A run
  // already in the set has its ancestors in it too, which also ends a cycle.
  const runById = new Map(runs.map((run) => [run.id, run]));
  const mayStillStart = new Set<string>();
  for (const run of runs.filter(going)) {
    for (let id: string | undefined = run.id; id !== undefined && !mayStillStart.has(id); id = runById.get(id)?.resumedFrom?.id) mayStillStart.add(id);
  }
  const auditsByRun = new Map<string, AuditView[]>();
  for (const audit of all) {
    const list = auditsByRun.get(audit.runId);
    if (list) list.push(audit);
    else auditsByRun.set(audit.runId, [audit]);
  }
  const rows: RowBase[] = [];
  const spans: [number, number][] = [];
  const push = (row: RowBase, start: number, end: number) => {
    rows.push(row);
    spans.push([start, end]);
  };
  const callNumbers = new Map<string, number>();
  for (const list of auditsByRun.values()) {
    let n = 0;
    for (const audit of list) if (audit.__typename === 'ModelAudit') callNumbers.set(audit.id, ++n);
  }
  const auditRow = (audit: AuditView, depth: number, unloadedBefore: number) => {
    const start = time(audit.startedAt);
    const running = audit.status === 'RUNNING' && !audit.awaitingRunTerminal;
    const end = Number.isNaN(time(audit.finishedAt)) ? now : time(audit.finishedAt);
    const isTool = audit.__typename === 'ToolAudit';
    push(
      {
        key: audit.id,
        kind: isTool ? 'tool' : 'model',
        depth,
        // A model call's number counts from the run's first loaded one: with older entries not loaded, it says so.
        label: isTool ? `${audit.name} (${audit.toolCallId})` : `${audit.model || 'model'} · call ${unloadedBefore ? '…' : ''}${callNumbers.get(audit.id)}`,
        status: audit.status,
        running,
        durationMs: audit.durationMs ?? (Number.isNaN(start) ? null : Math.max(0, end - start)),
        awaitingVerdict: Boolean(audit.awaitingRunTerminal),
        reason: audit.status === 'RUNNING' && !audit.awaitingRunTerminal ? null : reasonOf(audit.error),
        tokens: isTool ? null : tokensOf(audit.usage),
        sizes: payloadSizes(audit),
        ranInRun: null,
        audit,
        failures: null,
        failed: auditFailed(audit),
        unloaded: 0,
      },
      start,
      end,
    );
  };
  // A run's resumes, at any depth, whose entries are not all loaded: where a call it declared may
  // have run. A resume is created after the run it resumes, so one pass in creation order finds them.
  const unloadedResumesOf = (runId: string): string[] => {
    const line = new Set([runId]);
    return runs.flatMap((run) => {
      if (!run.resumedFrom || !line.has(run.resumedFrom.id)) return [];
      line.add(run.id);
      return (run.auditSummary?.audits ?? 0) > (auditsByRun.get(run.id)?.length ?? 0) ? [run.id] : [];
    });
  };
  /**
   * A declared call with no execution loaded: never started (PENDING or NEVER_RUN), or started
   * where it is not loaded (a resumed run not read yet), then it says so and where, if one run may hold it.
   */
  const declaredRow = (call: DeclaredCall, model: AuditView) => {
    const start = time(model.finishedAt);
    const ran = call.status !== 'PENDING';
    const status = ran ? call.status : mayStillStart.has(model.runId) ? 'PENDING' : 'NEVER_RUN';
    const ranIn = ran ? unloadedResumesOf(model.runId) : [];
    push(
      {
        key: declaredRowKey(call.id),
        kind: 'tool',
        depth: 2,
        label: `${call.name} (${call.toolCallId})`,
        status,
        running: false,
        durationMs: null,
        awaitingVerdict: false,
        reason: ran ? 'declared; ran where it is not loaded' : status === 'PENDING' ? 'declared, not started yet' : 'declared, never started',
        tokens: null,
        sizes: null,
        ranInRun: ranIn.length === 1 ? ranIn[0]! : null,
        failures: null,
        failed: false,
        unloaded: 0,
        declared: call,
      },
      start,
      start,
    );
  };
  for (const [index, run] of runs.entries()) {
    // A run with audits spans them: their times are the runtime's observations (observedAt), on
    // the runtime's clock, which the server's claim and finish times need not share. A run still
    // going reaches `now`; one without audits spans its claim to its end.
    const own = auditsByRun.get(run.id) ?? [];
    const going = run.status === 'RUNNING' || run.status === 'QUEUED';
    let start = own.length ? Infinity : time(run.startedAt ?? run.createdAt);
    let end = own.length && !going ? -Infinity : Number.isNaN(time(run.finishedAt)) ? now : time(run.finishedAt);
    for (const audit of own) {
      start = Math.min(start, time(audit.startedAt) || Infinity);
      end = Math.max(end, Number.isNaN(time(audit.finishedAt)) ? (audit.status === 'RUNNING' ? now : time(audit.startedAt)) : time(audit.finishedAt));
    }
    // Entries not loaded (an older page, or a run not expanded): the server's counts and times stand for them.
    const summary = run.auditSummary;
    const unloaded = summary ? Math.max(0, summary.audits - own.length) : 0;
    if (summary && unloaded > 0) {
      start = Math.min(start, time(summary.firstStartedAt) || Infinity);
      if (!going) end = Math.max(end, time(summary.lastFinishedAt) || -Infinity);
    }
    if (!Number.isFinite(start)) start = time(run.startedAt ?? run.createdAt);
    if (!Number.isFinite(end)) end = Number.isNaN(time(run.finishedAt)) ? now : time(run.finishedAt);
    const failures = failuresText(summary && unloaded > 0 ? summary : countFailures(own));
    const serverTokens = summary && (summary.inputTokens !== null || summary.outputTokens !== null) ? { input: Number(summary.inputTokens ?? 0), output: Number(summary.outputTokens ?? 0) } : null;
    push(
      {
        key: run.id,
        kind: 'run',
        depth: 0,
        label: `run ${index + 1} · ${shortId(run.id)}`,
        status: run.status,
        running: run.status === 'RUNNING' || run.status === 'QUEUED',
        durationMs: Number.isNaN(start) ? null : Math.max(0, end - start),
        awaitingVerdict: false,
        reason: reasonOf(run.error),
        tokens: unloaded > 0 ? serverTokens : addTokens(own.filter((audit) => audit.__typename === 'ModelAudit').map((audit) => tokensOf(audit.usage))),
        sizes: null,
        ranInRun: null,
        run,
        failures,
        failed: run.status === 'FAILED' || (unloaded > 0 && failures !== null),
        unloaded,
      },
      start,
      end,
    );
    for (const audit of auditsByRun.get(run.id) ?? []) {
      if (audit.__typename === 'ModelAudit') {
        auditRow(audit, 1, unloaded);
        for (const tool of toolsByModel.get(audit.id) ?? []) {
          auditRow(tool, 2, 0);
          if (tool.runId !== run.id) rows[rows.length - 1]!.ranInRun = tool.runId;
        }
        for (const call of audit.toolCalls ?? []) if (!started.has(call.id)) declaredRow(call, audit);
      } else if (!(audit.declaredBy?.id && models.has(audit.declaredBy.id))) {
        auditRow(audit, 1, 0);
      }
    }
  }
  const axis = buildAxis(spans, now, window, charShare);
  return {
    axis,
    rows: rows.map((row, index) => {
      const [start, end] = spans[index]!;
      const left = axis.position(start);
      const inView = !(Number.isFinite(start) && (start > axis.to || end < axis.from));
      return { ...row, start, end, inView, left, width: Math.max(0.4, Math.min(100 - left, axis.position(end) - left)) };
    }),
  };
}

export const layoutTimeline = (runs: readonly RunView[], audits: Iterable<AuditView>, now: number, window: TimeWindow | null = null): Row[] =>
  layoutTimelineWithAxis(runs, audits, now, window).rows;

/** "1.2 s", "340 ms", "2 min 5 s". */
export function formatDuration(ms: number | null): string {
  if (ms == null || !Number.isFinite(ms)) return '';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

/** How long ago, in its largest whole unit: "12 s ago", "5 min ago", "3 h ago", "2 d ago" (a week's window spans days). */
export function formatAgo(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  if (seconds < 60) return `${seconds} s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)} h ago`;
  return `${Math.floor(seconds / 86_400)} d ago`;
}
