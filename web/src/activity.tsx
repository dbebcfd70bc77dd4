// The Activity view (`#activity`): tool activity across every thread of the signed-in superadmin,
// live over the `toolActivity` subscription (docs/dashboards.md). The window and the tool filter
// live in the address (`#activity&window=3600&tool=search`), so a view can be bookmarked or shared.
import { signal, useSignal, type Signal } from '@preact/signals';
import { useEffect, useLayoutEffect, useRef } from 'preact/hooks';
import type uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import './activity.css';
import type { Client } from 'graphql-ws';
import { createLiveClient, gql, isTransient, messageOf, noteServerTime, retryAfterMs, serverClockAhead, subscribe, type ConnectionState } from './api.js';
import { useFocusedHeading } from './focus.js';
import { revealed } from './revealed.js';
import { dateTimeLabel, formatAgo, formatDuration, markedText, utcOffsetLabel } from './timeline.js';
import { TOOL_ACTIVITY, TOOL_NAMES, TOOLS_PAGE } from './activity-query.js';
import type { PageActivityAuditFragment, PageToolActivitySubscription } from './generated/graphql/graphql.js';

/** The address's hash, kept current; the App shows this view while it starts with `#activity`. */
export const hash = signal(location.hash);
addEventListener('hashchange', () => (hash.value = location.hash));
// Back and Forward through the filter changes (pushState fires no hashchange of its own).
addEventListener('popstate', () => (hash.value = location.hash));
export const isActivityHash = (value: string) => /^#activity(&|$)/.test(value);
/**
 * The Activity view's own live connection (the header shows it while the view does); null once
 * the server ended the subscription (refused it, or stopped), which the page does not retry.
 */
export const activityConnection = signal<ConnectionState | null>('connecting');

export const WINDOWS = [
  { seconds: 900, label: '15 min' },
  { seconds: 3600, label: '1 h' },
  { seconds: 86_400, label: '24 h' },
  { seconds: 604_800, label: '7 d' },
];

interface Settings {
  windowSeconds: number;
  tool: string;
}

function settingsOf(value: string): Settings {
  const params = new URLSearchParams(value.replace(/^#/, ''));
  const windowSeconds = Number(params.get('window'));
  return { windowSeconds: WINDOWS.some((w) => w.seconds === windowSeconds) ? windowSeconds : 3600, tool: params.get('tool') ?? '' };
}

/** The view as the tab's title names it: its tool and window ("Activity: search, 1 h"), so its tabs tell apart. */
export function activityTitle(value: string): string {
  const { windowSeconds, tool } = settingsOf(value);
  return `Activity: ${tool ? markedText(tool) : 'all tools'}, ${WINDOWS.find((w) => w.seconds === windowSeconds)!.label}`;
}

const addressOf = (settings: Settings) => {
  const params = new URLSearchParams({ window: String(settings.windowSeconds) });
  if (settings.tool) params.set('tool', settings.tool);
  return `#activity&${params.toString()}`;
};

/** A filter change is a step Back returns from, unless it `continues` the step before (replacing it). */
function setSettings(settings: Settings, continues = false) {
  const next = addressOf(settings);
  if (continues) history.replaceState(null, '', next);
  else history.pushState(null, '', next);
  hash.value = next;
}

/**
 * The filters' onChange. An arrow key on a select changes it at each press: the presses on one
 * select, while it keeps the focus, are one step (the first pushes it, the next ones replace it),
 * so Back returns to the value before them, not to the one a press before. A choice made otherwise
 * (a mouse's) is a step of its own.
 */
function useFilterSteps() {
  const keyDownOn = useRef<EventTarget | null>(null);
  const step = useRef<{ select: EventTarget; address: string } | null>(null);
  const change = (event: { currentTarget: HTMLSelectElement }, settings: Settings) => {
    const select = event.currentTarget;
    const byKey = keyDownOn.current === select;
    setSettings(settings, byKey && step.current?.select === select && step.current.address === location.hash);
    step.current = byKey ? { select, address: location.hash } : null;
  };
  const keys = {
    onKeyDown: (event: { currentTarget: EventTarget }) => void (keyDownOn.current = event.currentTarget),
    onKeyUp: () => void (keyDownOn.current = null),
    onBlur: () => void (step.current = keyDownOn.current = null),
  };
  return { change, keys };
}

/** A view: the table's rows (`tools`) are the first `toolsShown` in the order clicked; `longest` is the view's longest call, for the failures' search window. */
export type ActivityView = PageToolActivitySubscription['toolActivity'];
type ActivityAudit = PageActivityAuditFragment;

/** The link that opens an audit's row in its thread's timeline. */
const rowLink = (audit: ActivityAudit) => `#thread=${audit.run.thread.id}&audit=${audit.id}`;
const runLabelOf = (runId: string) => `run · ${runId.slice(-6)}`;
const ms = (value: number | null) => (value === null ? '—' : formatDuration(value));

/** The first line of an error: its message when it has one, else its JSON. */
export function firstLine(error: unknown): string {
  const text =
    typeof error === 'string' ? error : typeof (error as { message?: unknown })?.message === 'string' ? (error as { message: string }).message : JSON.stringify(error);
  return (text ?? '').split('\n')[0]!;
}

/** The table's columns, as the server orders tools by them (ToolActivityOrderField). */
type Column = 'NAME' | 'CALLS' | 'FAILURE_RATE' | 'OTHER_ENDED' | 'P50' | 'P95' | 'MAX';
interface ToolOrder {
  key: Column;
  descending: boolean;
}
/** The longest tool name the server takes (MAX_ID_LENGTH). */
const MAX_TOOL_NAME = 256;
/** The most rows the server lists (`tools(first)`: 1 to 1,000). */
const MAX_TOOLS = 1000;
/** Said below the table, where a finger can read it too (a title shows only on a mouse's hover). */
const OTHER_ENDS_NOTE = 'activity-other-ends';
const COLUMNS: { key: Column; label: string; describedBy?: string }[] = [
  { key: 'NAME', label: 'Tool' },
  { key: 'CALLS', label: 'Calls' },
  { key: 'FAILURE_RATE', label: 'Failure rate' },
  { key: 'OTHER_ENDED', label: 'Other ends', describedBy: OTHER_ENDS_NOTE },
  { key: 'P50', label: 'p50' },
  { key: 'P95', label: 'p95' },
  { key: 'MAX', label: 'Max' },
];

/**
 * The tools the view lists, in the server's order (`order`, the column clicked): a click asks the
 * server again (`onOrder`), which sends the top of that column; `onMore` asks for more rows.
 */
function ToolTable({ view, order, onOrder, onMore }: { view: ActivityView; order: ToolOrder; onOrder: (order: ToolOrder) => void; onMore: () => void }) {
  const { key, descending } = order;
  const { tools, toolCount } = view;
  return (
    <>
      <table class="activity-tools" data-testid="activity-tools">
        <caption>Tools</caption>
        <thead>
          <tr>
            {COLUMNS.map((column) => (
              <th key={column.key} scope="col" aria-sort={key === column.key ? (descending ? 'descending' : 'ascending') : 'none'}>
                <button aria-describedby={column.describedBy} onClick={() => onOrder({ key: column.key, descending: key === column.key ? !descending : column.key !== 'NAME' })}>
                  {column.label}
                </button>
                {/* For the eye what aria-sort says to a screen reader, which would read the arrow twice. */}
                {key === column.key && <span class="sort-mark" aria-hidden="true">{descending ? '▼' : '▲'}</span>}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {tools.map((stat) => (
            <tr key={stat.name}>
              <td class="name">{revealed(stat.name)}</td>
              <td>{stat.calls}{stat.running ? ` (${stat.running} running)` : ''}</td>
              {/* The server's rate (null with nothing ended, which it orders last either way). */}
              <td>{stat.failureRate === null ? '—' : `${Math.round(stat.failureRate * 1000) / 10} %`}</td>
              <td>{stat.otherEnded}</td>
              <td>{ms(stat.p50DurationMs)}</td>
              <td>{ms(stat.p95DurationMs)}</td>
              <td>{ms(stat.maxDurationMs)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {tools.length < toolCount && (
        <p class="muted" data-testid="activity-tools-count">
          showing {tools.length} of {toolCount} tools · <button onClick={onMore}>show {Math.min(TOOLS_PAGE, toolCount - tools.length)} more</button>
        </p>
      )}
      <p class="muted" id={OTHER_ENDS_NOTE}>Other ends: calls that ended within the window as CANCELLED, INTERRUPTED or ABANDONED.</p>
    </>
  );
}

const CHART_HEIGHT = 180;
/**
 * The chart's series. Failed and other ends are drawn dashed and dotted (their legend's marks too),
 * not told from completed by a colour alone (red against green is no difference to many eyes).
 */
const SERIES: { label: string; colour: string; dash?: number[]; marker: 'solid' | 'dashed' | 'dotted' }[] = [
  { label: 'started', colour: '--chart-started', marker: 'solid' },
  { label: 'completed', colour: '--chart-completed', marker: 'solid' },
  { label: 'failed', colour: '--chart-failed', dash: [6, 3], marker: 'dashed' },
  { label: 'other ends', colour: '--chart-other', dash: [1.5, 3], marker: 'dotted' },
];

/** uPlot (chart.js, from this server: no other view downloads it), loaded when a chart first draws. */
let chartLibrary: Promise<typeof uPlot> | undefined;
const loadChartLibrary = () =>
  (chartLibrary ??= import('./chart.js').then(
    (module) => module.default,
    (error: unknown) => {
      // Not kept: the next chart drawn asks again (a phone's network back).
      chartLibrary = undefined;
      throw error;
    },
  ));

/**
 * Started, completed, failed and other ends per bucket, drawn with uPlot, as wide as its box: it
 * follows the box when the window is resized or a phone turned.
 */
function Chart({ view: { buckets, since, at, longest }, tool }: { view: ActivityView; tool: string }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  // The axis spans the whole window, not its buckets' starts: a 1 h window on a phone is ticked
  // every 30 min, and the starts' span (59.5 min) then held a single tick when it began just after one.
  const span = useRef<[number, number]>([0, 0]);
  span.current = [Date.parse(since) / 1000, Date.parse(at) / 1000];
  const data: uPlot.AlignedData = [
    buckets.map((bucket) => Date.parse(bucket.start) / 1000),
    buckets.map((bucket) => bucket.started),
    buckets.map((bucket) => bucket.completed),
    buckets.map((bucket) => bucket.failed),
    buckets.map((bucket) => bucket.otherEnded),
  ];
  // The newest data, for the chart drawn once its library has loaded.
  const latest = useRef(data);
  latest.current = data;
  // Drawn again for a new view only, not for each tick of the rows' clocks.
  useEffect(() => void plot.current?.setData(data), [buckets]);
  useEffect(() => {
    const element = box.current!;
    let gone = false;
    void loadChartLibrary().then((UPlot) => {
      if (gone) return;
      // The colours are activity.css's, for the scheme in use when the chart draws.
      const colour = (name: string) => () => getComputedStyle(element).getPropertyValue(name).trim();
      const axis = { stroke: colour('color'), grid: { stroke: colour('--chart-grid') }, ticks: { stroke: colour('--chart-grid') } };
      plot.current = new UPlot(
        {
          width: element.clientWidth,
          height: CHART_HEIGHT,
          // Time labels ("12:40pm") are about 50 px wide: at uPlot's 50 px between ticks they ran
          // into one another on a phone.
          axes: [{ ...axis, space: 72 }, axis],
          scales: { x: { time: true, range: () => span.current } },
          // 120 buckets: a marker on each drew the quiet ones as a dotted band along zero.
          series: [{}, ...SERIES.map(({ label, colour: name, dash }) => ({ label, stroke: colour(name), dash, width: 1.5, points: { show: false } }))],
          legend: { markers: { dash: (_: uPlot, i: number) => SERIES[i - 1]?.marker ?? 'solid' } },
        },
        latest.current,
        element,
      );
    }, () => {}); // not loaded: the chart's numbers (the table below) still read
    const observer = new ResizeObserver(() => {
      const width = element.clientWidth;
      if (plot.current && width > 0 && width !== plot.current.width) plot.current.setSize({ width, height: CHART_HEIGHT });
    });
    observer.observe(element);
    return () => {
      gone = true;
      observer.disconnect();
      plot.current?.destroy();
    };
  }, []);
  // The drawn chart and its legend (whose values show only under a mouse) are not read out: the table below says it all.
  return (
    <figure class="activity-chart" aria-label="Tool audits started, completed, failed and otherwise ended over the window">
      <div ref={box} aria-hidden="true" />
      <BucketTable view={{ buckets, since, at, longest }} tool={tool} />
    </figure>
  );
}

type SpannedView = Pick<ActivityView, 'buckets' | 'since' | 'at' | 'longest'>;

/** The width of the view's buckets, in milliseconds. */
const bucketMsOf = ({ buckets, since, at }: SpannedView) => {
  const windowMs = Date.parse(at) - Date.parse(since);
  return buckets.length ? windowMs / buckets.length : windowMs;
};

/**
 * The failed tool calls that ended from `from` to `until` as a search across threads (store.ts's
 * address). The view counts the calls that ended in a span, a search window the starts the server
 * recorded in it: the window opens earlier by the longest call of the view and a bucket (the
 * worker's clock measured the call), so that it holds every call the count holds.
 */
function failuresLink(view: SpannedView, tool: string, from: string, until: string) {
  const longestMs = Math.max(0, ...view.longest.map((stat) => stat.maxDurationMs ?? 0));
  // Tool calls alone, as the view counts: a failed model call of the window is no call it counted.
  const params = new URLSearchParams({ status: 'FAILED', kind: 'TOOL' });
  if (tool) params.set('name', tool);
  params.set('since', new Date(Date.parse(from) - longestMs - bucketMsOf(view)).toISOString());
  params.set('until', until);
  return `#${params.toString()}`;
}

/** How many tool calls ended FAILED within the window: those `recentFailures` lists the newest of. */
const failedInWindow = (view: Pick<ActivityView, 'buckets'>) => view.buckets.reduce((sum, bucket) => sum + bucket.failed, 0);

/** The chart's numbers, a row for each bucket that holds any: what a screen reader (or a copy) reads instead of the lines. */
function BucketTable({ view, tool }: { view: SpannedView; tool: string }) {
  const { buckets, since, at } = view;
  const windowMs = Date.parse(at) - Date.parse(since);
  const bucketMs = bucketMsOf(view);
  const format: Intl.DateTimeFormatOptions = {
    hour: '2-digit', minute: '2-digit',
    ...(bucketMs < 60_000 && { second: '2-digit' }),
    ...(windowMs > 86_400_000 && { month: 'short', day: 'numeric' }),
  };
  const held = buckets.filter((bucket) => bucket.started || bucket.completed || bucket.failed || bucket.otherEnded);
  return (
    <details class="activity-buckets">
      <summary>The chart's numbers</summary>
      {held.length === 0 ? (
        <p class="muted">Nothing started or ended within the window.</p>
      ) : (
        // Focusable: on a narrow window it scrolls sideways, by the keyboard too.
        <div class="table-box" role="region" aria-label="The chart's numbers" tabIndex={0}>
          <table data-testid="activity-buckets">
            <caption>Tool audits per bucket of {formatDuration(bucketMs)}, the buckets that hold any</caption>
            <thead>
              <tr><th scope="col">From</th><th scope="col">Started</th><th scope="col">Completed</th><th scope="col">Failed</th><th scope="col">Other ends</th></tr>
            </thead>
            <tbody>
              {held.map((bucket) => (
                <tr key={bucket.start}>
                  <th scope="row"><time dateTime={bucket.start}>{new Date(bucket.start).toLocaleString([], format)} {utcOffsetLabel(bucket.start)}</time></th>
                  <td>{bucket.started}</td><td>{bucket.completed}</td>
                  <td>{bucket.failed ? <a href={failuresLink(view, tool, bucket.start, buckets[buckets.indexOf(bucket) + 1]?.start ?? at)} aria-label={`${bucket.failed} failed: list them`}>{bucket.failed}</a> : 0}</td>
                  <td>{bucket.otherEnded}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </details>
  );
}

/** The page's clock as the server's: read by the parts that show ages, so only they draw again at each tick. */
const serverNow = (clock: Signal<number>) => clock.value + serverClockAhead.value;

function Running({ view, clock }: { view: ActivityView; clock: Signal<number> }) {
  const now = serverNow(clock);
  return (
    <section aria-label="Running now">
      <h2 tabIndex={-1}>Running now ({view.runningCount})</h2>
      {view.running.length < view.runningCount && (
        <p class="muted">showing {view.running.length} of {view.runningCount}, the longest running</p>
      )}
      {view.running.length === 0 ? (
        <p class="muted">Nothing is running.</p>
      ) : (
        <div class="table-box">
          <table data-testid="activity-running">
            <thead>
              <tr><th scope="col">Tool</th><th scope="col">Thread</th><th scope="col">Run</th><th scope="col">Running for</th><th scope="col">Lease left</th></tr>
            </thead>
            <tbody>
              {view.running.map((audit) => {
                const lease = audit.run.leaseExpiresAt ? Date.parse(audit.run.leaseExpiresAt) - now : null;
                return (
                  <tr key={audit.id}>
                    <td class="name">
                      <a href={rowLink(audit)}>{revealed(audit.name)}</a>
                      {audit.awaitingRunTerminal && (
                        <span class="error-line" data-testid="awaiting-verdict">
                          {' '}error reported: {firstLine(audit.error)}, awaiting the run's verdict
                        </span>
                      )}
                    </td>
                    <td class="name">{revealed(audit.run.thread.title ?? audit.run.thread.id)}</td>
                    <td>{runLabelOf(audit.run.id)}</td>
                    <td>{audit.startedAt ? formatDuration(Math.max(0, now - Date.parse(audit.startedAt))) : '—'}</td>
                    <td>{lease === null ? '—' : lease > 0 ? formatDuration(lease) : 'expired'}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

function Failures({ view, clock, tool }: { view: ActivityView; clock: Signal<number>; tool: string }) {
  const now = serverNow(clock);
  const failed = failedInWindow(view);
  return (
    <section aria-label="Recent failures">
      <h2 tabIndex={-1}>Recent failures ({failed})</h2>
      {failed > 0 && (
        <p class="muted" data-testid="activity-failures-count">
          {view.recentFailures.length < failed ? `showing ${view.recentFailures.length} of ${failed}, the newest` : `all ${failed} shown`} ·{' '}
          <a href={failuresLink(view, tool, view.since, view.at)}>search the window's failed tool calls</a>
        </p>
      )}
      {view.recentFailures.length === 0 ? (
        <p class="muted">No failures within the window.</p>
      ) : (
        <ul class="activity-failures" data-testid="activity-failures">
          {view.recentFailures.map((audit) => (
            <li key={audit.id}>
              {audit.finishedAt && (
                <time class="muted" dateTime={audit.finishedAt} title={dateTimeLabel(audit.finishedAt)}>
                  {formatAgo(now - Date.parse(audit.finishedAt))}
                </time>
              )}{' '}
              <a href={rowLink(audit)}>{revealed(audit.name)}</a> <span class="muted">{revealed(audit.run.thread.title ?? audit.run.thread.id)}</span>{' '}
              <span class="error-line">{firstLine(audit.error)}</span>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

/**
 * What a screen reader is told (politely) of a view: the failures it lists that the view before did
 * not, with the window's count; null when none is new, or with no view before (the first view of a
 * window or tool), so views that only move the numbers say nothing.
 */
export function failureNews(before: ActivityView | null, view: ActivityView): string | null {
  if (!before) return null;
  const known = new Set(before.recentFailures.map((audit) => audit.id));
  const fresh = view.recentFailures.filter((audit) => !known.has(audit.id));
  if (!fresh.length) return null;
  const [latest] = fresh;
  const failed = failedInWindow(view);
  const more = fresh.length > 1 ? ` and ${fresh.length - 1} more` : '';
  return `${markedText(latest!.name)} failed (${markedText(latest!.run.thread.title ?? latest!.run.thread.id)}): ${firstLine(latest!.error)}${more}. ${failed} ${failed === 1 ? 'failure' : 'failures'} within the window.`;
}

const TOOL_NAMES_LIST = 'activity-tool-names';

/**
 * The Tool filter: a text box suggesting the window's tool names as one types (300 of them were a
 * select too long to use). A name is chosen by Enter, by leaving the box, or by picking a
 * suggestion; an empty box is every tool. Names show with their bidi controls as marks, in the
 * box and its suggestions: the name shown or typed as marked is the name as stored.
 */
function ToolFilter({ tool, names, onTool }: { tool: string; names: string[]; onTool: (tool: string) => void }) {
  /** What the reader typed and has not chosen yet: live views drawing the box again keep it. */
  const draft = useSignal<string | null>(null);
  const choose = (text: string) => {
    draft.value = null;
    const name = text.trim() === '' ? '' : names.includes(text) ? text : (names.find((known) => markedText(known) === text) ?? text);
    if (name !== tool) onTool(name);
  };
  return (
    <label>
      Tool{' '}
      <input
        type="search"
        list={TOOL_NAMES_LIST}
        placeholder="all tools"
        maxLength={MAX_TOOL_NAME}
        autocomplete="off"
        spellcheck={false}
        value={draft.value ?? markedText(tool)}
        onInput={(event) => {
          const text = event.currentTarget.value;
          // A suggestion picked (not a key typed) is a choice made.
          if (!(event instanceof InputEvent) || event.inputType === 'insertReplacementText') choose(text);
          else draft.value = text;
        }}
        onChange={(event) => choose(event.currentTarget.value)}
      />
      <datalist id={TOOL_NAMES_LIST}>
        {names.map((name) => <option key={name} value={markedText(name)} />)}
      </datalist>
    </label>
  );
}

export function Activity({ token }: { token: string }) {
  const settings = settingsOf(hash.value);
  const heading = useFocusedHeading();
  // The address says what shows: a window the page does not offer (or none) becomes the one shown.
  useEffect(() => {
    const shown = addressOf(settings);
    if (location.hash !== shown) history.replaceState(null, '', shown);
  }, [hash.value]);
  const view = useSignal<ActivityView | null>(null);
  /** The per-tool table's column and direction, and how many of its rows it asks for: both the server's to apply. */
  const toolOrder = useSignal<ToolOrder>({ key: 'CALLS', descending: true });
  const toolsShown = useSignal(TOOLS_PAGE);
  /** What the view shown is of: a new order or more rows keep it until the server's answer replaces it. */
  const viewOf = useRef('');
  const news = useSignal('');
  const error = useSignal<string | null>(null);
  const ended = useSignal(false);
  /** The window's tool names, the Tool filter's suggestions: its read's and those its views listed since. */
  const toolNames = useSignal<string[]>([]);
  const clock = useSignal(Date.now());
  useEffect(() => {
    const timer = setInterval(() => (clock.value = Date.now()), 1000);
    return () => clearInterval(timer);
  }, []);
  // Every tool name of the window, for the Tool filter (the view lists only the table's rows): read
  // once per window, not with every view. Another window's names are not offered.
  useEffect(() => {
    let gone = false;
    toolNames.value = [];
    const read = (failures: number): void =>
      void gql(token, TOOL_NAMES, { windowSeconds: settings.windowSeconds }).then(
        ({ toolActivity }) => void (gone || addToolNames(toolActivity.tools.map((tool) => tool.name))),
        // Not read (the server busy, away): tried again, later each time; meanwhile the names the views show are offered.
        (error: unknown) => {
          if (!gone && isTransient(messageOf(error))) setTimeout(() => gone || read(failures + 1), retryAfterMs(failures));
        },
      );
    read(0);
    return () => void (gone = true);
  }, [token, settings.windowSeconds]);
  const addToolNames = (more: string[]) => {
    const names = new Set([...toolNames.value, ...more]);
    if (names.size > toolNames.value.length) toolNames.value = [...names].sort();
  };
  /** The view's one connection (per token): a new window, tool, order or more rows subscribe again on it. */
  const client = useSignal<Client | null>(null);
  useEffect(() => {
    let gone = false;
    activityConnection.value = 'connecting';
    const made = createLiveClient(token, (state) => void (gone || ended.peek() || (activityConnection.value = state)));
    client.value = made;
    return () => ((gone = true), void made.dispose());
  }, [token]);
  useEffect(() => {
    const live = client.value;
    if (!live) return;
    const shows = `${settings.windowSeconds} ${settings.tool}`;
    if (viewOf.current !== shows) view.value = null;
    viewOf.current = shows;
    // The ended subscription's connection closed with it (its last): this one opens it again.
    if (ended.peek()) activityConnection.value = 'connecting';
    ended.value = false;
    let over = false;
    // The server refused the subscription (FORBIDDEN for any role but superadmin) or ended it: no
    // view is coming, and no connection is kept to say otherwise (the client closes it, idle).
    const end = () => {
      if (over) return; // stopped by the page (a new order), which completes it too
      over = true;
      ended.value = true;
      activityConnection.value = null;
    };
    const stop = subscribe(
      live,
      TOOL_ACTIVITY,
      {
        windowSeconds: settings.windowSeconds,
        name: settings.tool || null,
        toolsFirst: toolsShown.value,
        toolsOrder: { field: toolOrder.value.key, direction: toolOrder.value.descending ? 'DESC' : 'ASC' },
      },
      {
        next: ({ data, errors }) => {
          if (errors?.length) error.value = errors[0]!.message;
          else if (data) {
            news.value = failureNews(view.value, data.toolActivity) ?? news.value;
            view.value = data.toolActivity;
            noteServerTime(Date.parse(data.toolActivity.at));
            error.value = null;
            addToolNames(data.toolActivity.tools.map((tool) => tool.name));
          }
        },
        error: (reason) => {
          error.value = Array.isArray(reason) ? reason[0]?.message : 'The live connection failed.';
          end();
        },
        complete: end,
      },
    );
    // The client closes its connection once no subscription holds it: the next one (a new order)
    // subscribes in the same pass as this stops, before that, so the connection is kept.
    return () => ((over = true), stop());
  }, [client.value, settings.windowSeconds, settings.tool, toolOrder.value, toolsShown.value]);

  const current = view.value;
  const steps = useFilterSteps();
  const root = useRef<HTMLElement>(null);
  const focused = useRef<{ element: Element; href: string | null; part: string | null } | null>(null);
  // A view that drops the row focus was on (its call ended, or left the failures listed) left focus
  // on the page's top: it goes to that call where the view still lists it (a failed call among the
  // failures), else to the heading of the part the row was in.
  useLayoutEffect(() => {
    const was = focused.current;
    if (!was || was.element.isConnected || (document.activeElement && document.activeElement !== document.body)) return;
    const links = [...root.current!.querySelectorAll<HTMLElement>('a[href]')];
    const part = [...root.current!.querySelectorAll('section')].find((section) => section.getAttribute('aria-label') === was.part);
    (links.find((link) => was.href !== null && link.getAttribute('href') === was.href) ?? part?.querySelector<HTMLElement>('h2'))?.focus();
  });
  // Back from where one of the view's links led (a call's row): that link takes the focus again, once
  // the view lists it, as it held it when followed (the history entry keeps its address), not the heading.
  const followed = useRef((history.state as { followed?: string } | null)?.followed ?? null);
  useLayoutEffect(() => {
    const href = followed.current;
    if (!href || !current) return;
    followed.current = null;
    if (document.activeElement === heading.current) root.current!.querySelector<HTMLElement>(`a[href="${CSS.escape(href)}"]`)?.focus();
  });
  return (
    <section
      class="activity"
      aria-label="Tool activity"
      ref={root}
      onClick={(event) => {
        const href = (event.target as Element).closest('a[href^="#"]')?.getAttribute('href');
        if (href) history.replaceState({ followed: href }, '');
      }}
      onFocusIn={(event) => {
        const element = event.target as Element;
        focused.current = { element, href: element.getAttribute('href'), part: element.closest('section[aria-label]:not(.activity)')?.getAttribute('aria-label') ?? null };
      }}
      // Focus the reader moved off (a click elsewhere) is theirs: only a row the view dropped is followed.
      onFocusOut={(event) => {
        const element = event.target as Element;
        queueMicrotask(() => void (element.isConnected && focused.current?.element === element && (focused.current = null)));
      }}
    >
      <h1 ref={heading} tabIndex={-1}>Tool activity</h1>
      <div class="activity-controls">
        <label>
          Window{' '}
          <select value={String(settings.windowSeconds)} onChange={(e) => steps.change(e, { ...settings, windowSeconds: Number(e.currentTarget.value) })} {...steps.keys}>
            {WINDOWS.map((w) => <option key={w.seconds} value={String(w.seconds)}>{w.label}</option>)}
          </select>
        </label>
        <ToolFilter tool={settings.tool} names={toolNames.value} onTool={(tool) => setSettings({ ...settings, tool })} />
        {current && <span class="muted" data-testid="activity-at">as of {new Date(current.at).toLocaleTimeString()} {utcOffsetLabel(current.at)}</span>}
      </div>
      {/* Always there, so that a screen reader says what it comes to hold: a name typed that the window has no call of. */}
      <p class="muted activity-no-tool" role="status" data-testid="activity-no-tool">
        {current && settings.tool && current.toolCount === 0
          ? `No call of ${markedText(settings.tool)} ran within the ${WINDOWS.find((w) => w.seconds === settings.windowSeconds)!.label} window.`
          : ''}
      </p>
      {error.value && <p class="banner error" role="alert">{error.value}</p>}
      <p class="visually-hidden" role="status" aria-atomic="true" data-testid="activity-news">{news.value}</p>
      {!current ? (
        !ended.value && <p class="muted">Loading…</p>
      ) : (
        <>
          <Running view={current} clock={clock} />
          <section aria-label="Per tool" class="table-box">
            <ToolTable
              view={current}
              order={toolOrder.value}
              onOrder={(order) => (toolOrder.value = order)}
              onMore={() => (toolsShown.value = Math.min(toolsShown.value + TOOLS_PAGE, MAX_TOOLS))}
            />
          </section>
          <section aria-label="Over time">
            <h2>Over time</h2>
            <Chart view={current} tool={settings.tool} />
          </section>
          <Failures view={current} clock={clock} tool={settings.tool} />
        </>
      )}
    </section>
  );
}
