import type { Principal } from './principal.js';
import { preparedGeneric, type Sql } from '../db/sql.js';
import { inLiveThreadOf, requireAuditReader } from './access.js';
import { auditColumns, type AuditRow, type Payload } from './audit-reads.js';
import { badInput } from './errors.js';
import { nameFilter } from './ids.js';

/** The window a view covers, in seconds: a minute to a week. */
export const MIN_WINDOW_SECONDS = 60;
export const MAX_WINDOW_SECONDS = 604_800;
/** The window of a view that names none: an hour. */
export const DEFAULT_WINDOW_SECONDS = 3_600;
/** A view over a longer window is a wide one: a principal runs a few at once (src/graphql/search-limits.ts). */
export const WIDE_WINDOW_SECONDS = DEFAULT_WINDOW_SECONDS;
/** The most audits `running(first)` and `recentFailures(first)` list. */
export const MAX_ACTIVITY_LIST = 100;
/** The most tools `tools(first)` lists; left out, every tool is listed. */
export const MAX_ACTIVITY_TOOLS = 1_000;
/** The most buckets a window is cut into. */
export const MAX_BUCKETS = 120;

export interface ToolActivityStat {
  name: string;
  running: number;
  completed: number;
  failed: number;
  otherEnded: number;
  p50DurationMs: number | null;
  p95DurationMs: number | null;
  maxDurationMs: number | null;
}

export interface ToolActivityBucket {
  start: Date;
  started: number;
  completed: number;
  failed: number;
  otherEnded: number;
}

/** One view: what the owner's tool audits did within the window that ends at `at`, read in one statement. */
export interface ToolActivity {
  at: Date;
  since: Date;
  runningCount: number;
  /** The longest-running first, at most MAX_ACTIVITY_LIST. */
  running: AuditRow[];
  /** The newest first, at most MAX_ACTIVITY_LIST. */
  recentFailures: AuditRow[];
  tools: ToolActivityStat[];
  buckets: ToolActivityBucket[];
}

export interface ToolActivityArgs {
  windowSeconds: number;
  /** Only this tool. */
  name: string | null;
}

/** The arguments as a view is keyed by (identical views are read once: src/realtime/activity-feeds.ts); bad ones are BAD_USER_INPUT. */
export function toolActivityArgs(windowSeconds: number | null | undefined, name: string | null | undefined): ToolActivityArgs {
  if (windowSeconds == null) {
    throw badInput(`windowSeconds must be between ${MIN_WINDOW_SECONDS} and ${MAX_WINDOW_SECONDS}, not null: leave it out for the default, ${DEFAULT_WINDOW_SECONDS}`);
  }
  if (!Number.isInteger(windowSeconds) || windowSeconds < MIN_WINDOW_SECONDS || windowSeconds > MAX_WINDOW_SECONDS) {
    throw badInput(`windowSeconds must be between ${MIN_WINDOW_SECONDS} and ${MAX_WINDOW_SECONDS}`);
  }
  return { windowSeconds, name: nameFilter(name) };
}

/** `first` of the view's lists; bad ones are BAD_USER_INPUT. */
export function activityListSize(first: number | null | undefined): number {
  if (first == null || first < 1 || first > MAX_ACTIVITY_LIST) throw badInput(`first must be between 1 and ${MAX_ACTIVITY_LIST}`);
  return first;
}

/**
 * `first` of the view's tools: every tool when left out (or null), as the contract's `tools` lists
 * them; else 1 to MAX_ACTIVITY_TOOLS, so that a dashboard can bound a view of a fleet with many tool
 * names (300 names were 41 kB of the page's 78 kB view). Bad ones are BAD_USER_INPUT.
 */
export function activityToolsSize(first: number | null | undefined): number | undefined {
  if (first == null) return undefined;
  if (first < 1 || first > MAX_ACTIVITY_TOOLS) throw badInput(`tools(first) must be between 1 and ${MAX_ACTIVITY_TOOLS}; leave it out for every tool`);
  return first;
}

/** The columns `tools` can be ordered by (`orderBy`). */
export const TOOL_ORDER_FIELDS = ['CALLS', 'FAILURE_RATE', 'OTHER_ENDED', 'P50', 'P95', 'MAX', 'NAME'] as const;
export type ToolOrderField = (typeof TOOL_ORDER_FIELDS)[number];
export interface ToolOrder {
  field: ToolOrderField;
  /** Left out: the largest values first, names A to Z. */
  descending?: boolean;
}

const endedOf = (stat: ToolActivityStat) => stat.completed + stat.failed + stat.otherEnded;
/** A tool's calls: running at `at` plus ended within the window (ToolActivityStat.calls, the CALLS column). */
export const callsOf = (stat: ToolActivityStat) => stat.running + endedOf(stat);
/** A tool's failure rate as the fraction [failed, ended within the window]; null with nothing ended. */
const failureFractionOf = (stat: ToolActivityStat): [number, number] | null => (endedOf(stat) ? [stat.failed, endedOf(stat)] : null);
/** A tool's failure rate (ToolActivityStat.failureRate, the FAILURE_RATE column): null with nothing ended. */
export const failureRateOf = (stat: ToolActivityStat) => {
  const fraction = failureFractionOf(stat);
  return fraction && fraction[0] / fraction[1];
};
/** A tool's value in a column as a fraction [numerator, denominator], so rates compare exactly; null when it has none. */
const VALUES: Record<Exclude<ToolOrderField, 'NAME'>, (stat: ToolActivityStat) => [number, number] | null> = {
  CALLS: (stat) => [callsOf(stat), 1],
  FAILURE_RATE: failureFractionOf,
  OTHER_ENDED: (stat) => [stat.otherEnded, 1],
  P50: (stat) => (stat.p50DurationMs === null ? null : [stat.p50DurationMs, 1]),
  P95: (stat) => (stat.p95DurationMs === null ? null : [stat.p95DurationMs, 1]),
  MAX: (stat) => (stat.maxDurationMs === null ? null : [stat.maxDurationMs, 1]),
};

/** Names in code point order, as the view's statement orders them (the C collation): the same on every backend and locale. */
const byName = (a: string, b: string) => (a === b ? 0 : Buffer.compare(Buffer.from(a), Buffer.from(b)));

/**
 * The view's tools in the order a dashboard asked for: by the column, either way, tools that have
 * no value in it (no ended call for FAILURE_RATE, no duration for P50, P95, MAX) last in either
 * direction, ties by name A to Z in either direction. Left out, the view's own order: the most
 * calls first (CALLS descending).
 */
export function orderedTools(tools: readonly ToolActivityStat[], order: ToolOrder | null | undefined): readonly ToolActivityStat[] {
  if (!order) return tools;
  const sign = (order.descending ?? order.field !== 'NAME') ? -1 : 1;
  if (order.field === 'NAME') return [...tools].sort((a, b) => sign * byName(a.name, b.name));
  const value = VALUES[order.field];
  const keyed = tools.map((stat) => ({ stat, value: value(stat) }));
  keyed.sort((a, b) => {
    if (a.value && b.value) {
      const byValue = Math.sign(a.value[0] * b.value[1] - b.value[0] * a.value[1]) * sign;
      if (byValue) return byValue;
    } else if (a.value || b.value) return a.value ? -1 : 1;
    return byName(a.stat.name, b.stat.name);
  });
  return keyed.map(({ stat }) => stat);
}

/** How many equal buckets a window is cut into: at most MAX_BUCKETS, none shorter than a second. */
export const bucketCount = (windowSeconds: number) => Math.min(MAX_BUCKETS, windowSeconds);

const GROUPED_BY = ['name', 'status', 'bin', 'end_bucket', 'start_bucket'];
/** GROUPING(name, status, bin, end_bucket, start_bucket) of the grouping set of these columns: a bit set for each column it does not group by. */
const grouping = (...set: string[]) => GROUPED_BY.reduce((bits, column) => (bits << 1) | (set.includes(column) ? 0 : 1), 0);
const BY_TOOL = grouping('name', 'status', 'bin');
const BY_TIME = grouping('status', 'end_bucket', 'start_bucket');

/** The value a percentile reports from its bin, an array [bin, least, greatest] (DURATION_BIN_GROWTH). */
const binValue = (bin: string) =>
  `least(${bin}[3], greatest(${bin}[2], round(2 * power(${DURATION_BIN_GROWTH}::float8, ${bin}[1]) / (${DURATION_BIN_GROWTH} + 1))))`;

/**
 * A listed audit's payloads the view reads: its error, which dashboards show (the page, its first
 * line). Its input and output, up to MAX_JSON_BYTES each (1 MiB by default), are loaded only for
 * a subscriber that asks for them (src/graphql/schema/audit.ts), not read with every view
 * (bench/README.md, run VL1).
 */
const LISTED_PAYLOADS: ReadonlySet<Payload> = new Set(['error']);
const columns = auditColumns(LISTED_PAYLOADS, 'm.');
/** Of the owner ($1), of the tool $3 when given, in a thread not deleted. */
const OWNERS = `m.owner_id = $1 AND ($3::text IS NULL OR m.name = $3::text) AND ${inLiveThreadOf('m.thread_id', '$1')}`;
/** A tool audit running at `at` (`message`), of the owner's. */
const RUNNING = `m.message_type = 'tool_audit' AND m.status = 'RUNNING' AND ${OWNERS}`;
/** An end within the window (`tool_audit_end`), of the owner's. */
const ENDED_IN_WINDOW = `${OWNERS} AND m.changed_at >= (SELECT since FROM w) AND m.changed_at <= (SELECT at FROM w)`;

/**
 * Durations are counted in log-spaced bins growing by this factor (DDSketch's idea): a bin holds
 * the values in (γ^(h−1), γ^h], and the value a percentile reports, 2γ^h/(γ+1) kept within the
 * bin's own least and greatest value, is within (γ−1)/(γ+1) ≈ 2 % of every value in the bin, so
 * of the exact nearest-rank percentile; rounded to a whole millisecond, within 4 % (SEMANTICS.md:
 * within 5 %). Below 25 ms a bin is narrower than a millisecond, so it holds one value and the
 * percentile is exact.
 */
export const DURATION_BIN_GROWTH = 1.04;

/**
 * A duration's bin: the least h with γ^h ≥ d, ⌈ln d / ln γ⌉. Durations are whole milliseconds, so
 * bin h holds ⌊γ^(h−1)⌋ + 1 to ⌊γ^h⌋; durations under a millisecond (0, or negative from a skewed
 * clock) are in bin −1. A logarithm per row costs less than the binary search among the bins'
 * starts it replaced (0.93× the view's time, bench/README.md, LN1, LN2). Below 2^31, γ^h is at
 * least 8·10⁻¹² (relative) from every whole number but for h = 0, where the logarithm is exact: a
 * thousand times what its rounding could move a bin's edge, so each duration gets the bin the
 * starts gave it.
 */
const binOf = (duration: string) =>
  `CASE WHEN ${duration} < 1 THEN -1 ELSE ceil(ln(${duration}::float8) * ${1 / Math.log(DURATION_BIN_GROWTH)})::int END`;

/**
 * Where buckets 1 to $4 − 1 start, to the microsecond: bucket k holds the times t with
 * ⌊(t − since)·$4 / $2⌋ = k (the last also `at` itself), so it starts at since + ⌈k·$2/$4⌉ s,
 * computed in whole microseconds. `width_bucket` over them gives a time's bucket by binary search.
 */
const BUCKET_STARTS = `ARRAY(SELECT c.at - make_interval(secs => $2::int) + ((k::bigint * $2::int * 1000000 + $4::int - 1) / $4::int) * interval '1 microsecond'
    FROM generate_series(1, $4::int - 1) k ORDER BY k)`;

/**
 * The view, one statement (so one snapshot). `at` is the database's clock read after the snapshot
 * was taken, so every change the snapshot holds is at or before it. Times are the commits', by the
 * database clock: an audit started when its start committed (`created_at`) and ended when its end
 * did (`changed_at`: an ended audit never changes again), never a worker's clock. It reads the
 * owner's running audits (`message`, through the partial index of migration
 * 20261202110000_tool_activity) and the ends within the window (`tool_audit_end`, the narrow copy
 * of each end the database keeps: migration 20261207000000_tool_audit_ends, so the audits'
 * payloads are never read), and nothing else of the owner's history.
 *
 * The window's ended audits are read once and hashed in one pass into two small sets of groups
 * (per tool, status and duration bin; per status, bucket of the end and bucket of the start),
 * never sorted or kept; their buckets come from `width_bucket` over starts computed once per
 * view, their bin from a logarithm (binOf). The running audits, a few, are grouped on their own.
 * Tools, percentiles and buckets are folded from those few thousand groups; a tool's counts and
 * percentiles in one aggregate, not two joined: the generic plan (its estimates a row each) joined
 * them by nested loop, each tool compared with every other (300 tools: 89,700 rows compared, and
 * the view took 1.5–2.2× as long, medians of EXPLAIN ANALYZE on PostgreSQL). The recent failures
 * are read on their own from the failed ends' index, in the list's order (migration
 * 20261208000000_tool_audit_failures): the failed ends only, newest first, until the list is
 * full, however many other ends the window holds.
 * The summary is built as `json`, text the server parses, not `jsonb`: nothing queries it, and
 * building `jsonb` cost a small window's view 1.08–1.11× the time (bench/README.md, run VJ1).
 * Prepared and planned once per connection (a generic plan): planned per execution, its planning
 * was half a small window's view (bench/README.md, run SV1).
 * $1 owner, $2 windowSeconds, $3 name, $4 bucket count, $5 list size.
 */
export const TOOL_ACTIVITY_STATEMENT = preparedGeneric(`WITH w AS MATERIALIZED (
  SELECT c.at, c.at - make_interval(secs => $2::int) AS since, ${BUCKET_STARTS} AS bucket_starts
  FROM (SELECT clock_timestamp() AS at) c),
running AS MATERIALIZED (
  SELECT m.id, m.name, m.created_at FROM message m WHERE ${RUNNING}),
ended AS (
  SELECT m.name, m.status, m.duration_ms, ${binOf('m.duration_ms')} AS bin,
    width_bucket(m.changed_at, (SELECT bucket_starts FROM w)) AS end_bucket,
    CASE WHEN m.created_at >= (SELECT since FROM w) THEN width_bucket(m.created_at, (SELECT bucket_starts FROM w)) END AS start_bucket
  FROM tool_audit_end m WHERE ${ENDED_IN_WINDOW}),
grouped AS MATERIALIZED (
  SELECT GROUPING(name, status, bin, end_bucket, start_bucket) AS grouping_set, name, status, bin, end_bucket, start_bucket,
    count(*) AS n, min(duration_ms) AS lo, max(duration_ms) AS hi
  FROM ended GROUP BY GROUPING SETS ((name, status, bin), (status, end_bucket, start_bucket))
  UNION ALL
  SELECT ${BY_TOOL}, name, 'RUNNING', NULL, NULL, NULL, count(*), NULL, NULL FROM running GROUP BY name
  UNION ALL
  SELECT ${BY_TIME}, NULL, 'RUNNING', NULL, NULL, width_bucket(created_at, (SELECT bucket_starts FROM w)), count(*), NULL, NULL
  FROM running WHERE created_at >= (SELECT since FROM w) GROUP BY 6),
by_tool AS (SELECT * FROM grouped WHERE grouping_set = ${BY_TOOL}),
bins AS (
  SELECT name, bin, sum(n) FILTER (WHERE status = 'RUNNING') AS running, sum(n) FILTER (WHERE status = 'COMPLETED') AS completed,
    sum(n) FILTER (WHERE status = 'FAILED') AS failed, sum(n) FILTER (WHERE status NOT IN ('RUNNING', 'COMPLETED', 'FAILED')) AS other_ended,
    sum(n) AS total, min(lo) AS lo, max(hi) AS hi,
    sum(CASE WHEN bin IS NOT NULL THEN sum(n) END) OVER (PARTITION BY name ORDER BY bin) AS below,
    sum(CASE WHEN bin IS NOT NULL THEN sum(n) END) OVER (PARTITION BY name) AS timed
  FROM by_tool GROUP BY name, bin),
tools AS (
  SELECT name, sum(running) AS running, sum(completed) AS completed, sum(failed) AS failed, sum(other_ended) AS other_ended, max(hi) AS max, sum(total) AS total,
    min(ARRAY[bin, lo, hi]) FILTER (WHERE bin IS NOT NULL AND below >= ceil(0.5 * timed)) AS p50,
    min(ARRAY[bin, lo, hi]) FILTER (WHERE bin IS NOT NULL AND below >= ceil(0.95 * timed)) AS p95
  FROM bins GROUP BY name),
by_time AS (SELECT * FROM grouped WHERE grouping_set = ${BY_TIME}),
buckets AS (
  SELECT bucket, sum(started) AS started, sum(completed) AS completed, sum(failed) AS failed, sum(other_ended) AS other_ended
  FROM (SELECT start_bucket AS bucket, n AS started, 0 AS completed, 0 AS failed, 0 AS other_ended FROM by_time WHERE start_bucket IS NOT NULL
        UNION ALL
        SELECT end_bucket, 0, CASE WHEN status = 'COMPLETED' THEN n ELSE 0 END, CASE WHEN status = 'FAILED' THEN n ELSE 0 END,
          CASE WHEN status NOT IN ('COMPLETED', 'FAILED') THEN n ELSE 0 END
        FROM by_time WHERE end_bucket IS NOT NULL) b
  GROUP BY bucket),
failures AS (
  SELECT m.audit_id AS id, m.changed_at FROM tool_audit_end m WHERE ${ENDED_IN_WINDOW} AND m.status = 'FAILED'
  ORDER BY m.changed_at DESC, m.audit_id DESC LIMIT $5),
listed AS (
  SELECT 0 AS part, 0::bigint AS ord, NULL::uuid AS id
  UNION ALL SELECT 1, row_number() OVER (ORDER BY created_at, id), id FROM (SELECT * FROM running ORDER BY created_at, id LIMIT $5) r
  UNION ALL SELECT 2, row_number() OVER (ORDER BY changed_at DESC, id DESC), id FROM failures)
SELECT l.part AS activity_part, w.at AS activity_at, w.since AS activity_since,
  CASE WHEN l.part = 0 THEN json_build_object(
    'runningCount', (SELECT count(*) FROM running),
    'tools', (SELECT coalesce(json_agg(json_build_array(t.name, coalesce(t.running, 0), coalesce(t.completed, 0), coalesce(t.failed, 0), coalesce(t.other_ended, 0),
        ${binValue('t.p50')}, ${binValue('t.p95')}, t.max)
      ORDER BY t.total DESC, t.name), '[]') FROM tools t),
    'buckets', (SELECT coalesce(json_agg(json_build_array(bucket, coalesce(started, 0), coalesce(completed, 0), coalesce(failed, 0), coalesce(other_ended, 0))), '[]') FROM buckets)) END AS activity_summary,
  ${columns}
FROM listed l CROSS JOIN w LEFT JOIN message m ON m.id = l.id
ORDER BY l.part, l.ord`);

type Summary = {
  runningCount: number;
  tools: [string, number, number, number, number, number | null, number | null, number | null][];
  buckets: [number, number, number, number, number][];
};
type ViewRow = AuditRow & { activityPart: number; activityAt: Date; activitySince: Date; activitySummary: Summary | null };

/**
 * Tool activity across the threads whose audits the principal may read: a superadmin's own
 * threads (SEMANTICS.md, "Dashboards"); any other role is FORBIDDEN.
 */
export async function readToolActivity(sql: Sql, principal: Principal, args: ToolActivityArgs): Promise<ToolActivity> {
  requireAuditReader(principal);
  return readOwnerToolActivity(sql, principal.sub, args);
}

/** The view of the owner's threads: the caller checked the access rule (readToolActivity, or a subscription's start). */
export async function readOwnerToolActivity(sql: Sql, ownerId: string, args: ToolActivityArgs): Promise<ToolActivity> {
  return viewOf(await sql.query<ViewRow>(TOOL_ACTIVITY_STATEMENT, statementArgs(ownerId, args)), args);
}

/** One owner's view to read (the caller checked the access rule). */
export interface OwnerActivityRead {
  ownerId: string;
  args: ToolActivityArgs;
}

/**
 * Several owners' views, each its own statement (so each one read at its own `at`), sent in one
 * round trip where the driver can (a dashboard feed's reads: src/realtime/activity-feeds.ts).
 */
export async function readOwnersToolActivity(sql: Sql, reads: readonly OwnerActivityRead[]): Promise<ToolActivity[]> {
  const argLists = reads.map(({ ownerId, args }) => statementArgs(ownerId, args));
  const results = sql.queryEach
    ? await sql.queryEach<ViewRow>(TOOL_ACTIVITY_STATEMENT, argLists)
    : await Promise.all(argLists.map((argList) => sql.query<ViewRow>(TOOL_ACTIVITY_STATEMENT, argList)));
  return results.map((rows, index) => viewOf(rows, reads[index]!.args));
}

const statementArgs = (ownerId: string, args: ToolActivityArgs) => [ownerId, args.windowSeconds, args.name, bucketCount(args.windowSeconds), MAX_ACTIVITY_LIST];

function viewOf(rows: ViewRow[], args: ToolActivityArgs): ToolActivity {
  const count = bucketCount(args.windowSeconds);
  const head = rows[0]!;
  const summary = head.activitySummary!;
  const since = head.activitySince;
  const widthMs = (args.windowSeconds * 1000) / count;
  const buckets: ToolActivityBucket[] = Array.from({ length: count }, (_, index) => ({
    start: new Date(since.getTime() + Math.round(index * widthMs)),
    started: 0,
    completed: 0,
    failed: 0,
    otherEnded: 0,
  }));
  for (const [index, started, completed, failed, otherEnded] of summary.buckets) {
    Object.assign(buckets[index]!, { started, completed, failed, otherEnded });
  }
  const audit = ({ activityPart: _p, activityAt: _a, activitySince: _s, activitySummary: _v, ...row }: ViewRow): AuditRow => row;
  return {
    at: head.activityAt,
    since,
    runningCount: summary.runningCount,
    running: rows.filter((row) => row.activityPart === 1).map(audit),
    recentFailures: rows.filter((row) => row.activityPart === 2).map(audit),
    tools: summary.tools.map(([name, running, completed, failed, otherEnded, p50, p95, max]) => ({
      name,
      running,
      completed,
      failed,
      otherEnded,
      p50DurationMs: p50,
      p95DurationMs: p95,
      maxDurationMs: max,
    })),
    buckets,
  };
}

/** How many ends' copies one statement of a prune removes at most, so that none holds its locks long. */
const PRUNE_BATCH = 5_000;

/**
 * Removes the ends' copies (`tool_audit_end`) that ended more than the widest window
 * (MAX_WINDOW_SECONDS) before `now`: no view reads them again, so the copy holds a week of ends
 * however long the history. Owner by owner on the copies' own `(owner_id, changed_at)` index (the
 * owners found by a skip scan of it), PRUNE_BATCH at a time. Returns how many it removed.
 */
export async function pruneToolAuditEnds(sql: Sql, now: Date): Promise<number> {
  let removed = 0;
  for (;;) {
    const [batch] = await sql.query<{ removed: number }>(
      `WITH RECURSIVE owners AS (
         (SELECT owner_id FROM tool_audit_end ORDER BY owner_id LIMIT 1)
         UNION ALL
         SELECT (SELECT e.owner_id FROM tool_audit_end e WHERE e.owner_id > o.owner_id ORDER BY e.owner_id LIMIT 1) FROM owners o WHERE o.owner_id IS NOT NULL),
       old AS (
         SELECT e.audit_id FROM owners o CROSS JOIN LATERAL (
           SELECT audit_id FROM tool_audit_end WHERE owner_id = o.owner_id AND changed_at < $1::timestamptz - make_interval(secs => $2::int) LIMIT $3) e
         LIMIT $3),
       gone AS (DELETE FROM tool_audit_end e USING old WHERE e.audit_id = old.audit_id RETURNING 1)
       SELECT count(*)::int AS removed FROM gone`,
      [now, MAX_WINDOW_SECONDS, PRUNE_BATCH],
    );
    removed += batch!.removed;
    if (batch!.removed < PRUNE_BATCH) return removed;
  }
}
