import { batch, computed, effect, signal, untracked } from '@preact/signals';
import type { Client } from 'graphql-ws';
import { answers, claimsOf, createLiveClient, gql, GraphQLRequestError, isTransient, messageOf, readFewer, retryAfterMs, serverClockAhead, storedToken, storeToken, tokenRefusal, type ConnectionState } from './api.js';
import { AUDITS_PAGE, followThread, readAuditPage, readRun, readsSoon, type ThreadInfo } from './live.js';
import { AUDIT_DETAIL, AUDIT_RUN, SEARCH_AUDITS, THREADS, TOOL_CALL_LEDGER } from './queries.js';
import type { AuditKind, AuditQuery, AuditStatus, SearchAuditsQuery, ThreadsQuery, ToolCallLedgerQuery } from './generated/graphql/graphql.js';
import { activityConnection, hash, isActivityHash } from './activity.js';
import { threadCountLabel } from '../../src/shared/thread-counts.js';
import { rowToOpen, type LedgerEntry, type LedgerFilter } from './ledger.js';
import { declaredRowKey, isDeclaredRowKey, layoutTimelineWithAxis, markedText, mergeAudits, mergeRuns, type AuditView, type Row, type RunView, type TimeWindow } from './timeline.js';

export const token = signal(storedToken());
export const claims = computed(() => (token.value ? claimsOf(token.value) : null));
export const connection = signal<ConnectionState>('connecting');

export type ThreadItem = ThreadsQuery['threads']['edges'][number]['node'];
export const threads = signal<ThreadItem[]>([]);
/** Whether `threads` holds an answer of the server's yet (until then the list is loading, not empty). */
export const threadsRead = signal(false);
export const threadsCursor = signal<string | null>(null);
export const threadsHaveMore = signal(false);
/** How many threads the list shows of how many its filter matches on every page (threads.totalCount), as last read. */
export const threadsCount = signal('');
/** What a screen reader is told after a read the reader asked for (a filter, More threads): how many show of how many. */
export const threadsNews = signal('');
export const pageError = signal<string | null>(null);

export const threadId = signal<string | null>(null);
export const threadInfo = signal<ThreadInfo | null>(null);
export const runs = signal<Map<string, RunView>>(new Map());
export const audits = signal<Map<string, AuditView>>(new Map());
/** The thread holds audits older than those loaded; `olderBefore` is the audit to page back from. */
export const truncated = signal(false);
export const olderBefore = signal<string | null>(null);
export const loadingOlder = signal(false);
/** The span of time shown (a zoom), or null for the whole thread. */
export const zoom = signal<TimeWindow | null>(null);
/** Opened rows' audits with their payloads, each with the summary it was read for (a newer summary means re-read). */
export const auditDetails = signal<Map<string, { summary: AuditView; detail: AuditDetail }>>(new Map());
export const auditsHidden = signal<string | null>(null);
/** The open thread is gone (deleted while open, or not found): its streams have stopped. */
export const threadGone = signal(false);
export const selectedKey = signal<string | null>(null);

/** The open thread's first audit page has arrived (or its audits are hidden). */
export const snapshotLoaded = signal(false);
/** Why the open thread's first read failed, until a read succeeds: shown where its rows would be. */
export const threadReadError = signal<string | null>(null);
/** An audit to select once its thread's timeline holds it (a search result opened). */
const pendingReveal = signal<string | null>(null);
/** A row asked for (a link) that the open thread does not hold, or not for this reader: said until another row is selected. */
export const rowNotFound = signal<string | null>(null);

export type SearchHit = SearchAuditsQuery['searchAudits']['items'][number];
/** An opened audit with its payloads (AUDIT_DETAIL). */
export type AuditDetail = AuditQuery['audit'];
export const searchText = signal('');
/** Exactly this tool or model name ('' for any). */
export const searchName = signal('');
/** An audit status to search for, or '' for any. */
export const searchStatus = signal<AuditStatus | ''>('');
/** Tool executions or model calls alone, or '' for both: a model call's input holds the conversation, so it matches what its tools said. */
export const searchKind = signal<AuditKind | ''>('');
/**
 * 'thread': within the open thread; 'all': every thread whose audits the caller may read. It says
 * what the results shown are: a search with no thread open is across all threads.
 */
export const searchScope = signal<'thread' | 'all'>('thread');
/** The window (ISO times, `since` inclusive, `until` exclusive) a search is limited to, or null for any time: an Activity bucket's link sets it. */
export const searchWindow = signal<SearchWindow | null>(null);
export interface SearchWindow {
  since: string;
  until: string;
}
/** A search's answer; `refused`: its text was refused (too short, too long), so the box is invalid; `kind`: the kind it kept to. */
export const searchResults = signal<{ hits: SearchHit[]; hasMore: boolean; error: string | null; refused?: boolean; forQuery: string; text: string; kind: AuditKind | null } | null>(null);
/** The text the shown results matched ('' for none): marked in the results and the opened row's details. */
export const searchedText = computed(() => (searchResults.value && !searchResults.value.error ? searchResults.value.text : ''));

/** Which view of the open thread shows: the timeline or the tool-call ledger. */
export const view = signal<'timeline' | 'ledger'>('timeline');
/** With no thread open: the thread list, or the ledger across the caller's threads. */
export const home = signal<'threads' | 'ledger'>('threads');
export const ledgerFilter = signal<LedgerFilter>({ name: '', status: '', case: '' });
/** The ledger shown (the open thread's, or across threads), as read for `forQuery`. */
export const ledgerPage = signal<{ entries: LedgerEntry[]; hasMore: boolean; error: string | null; forQuery: string } | null>(null);
/** Tool names seen in the ledger since it opened: the name filter's choices outlive a filter. */
export const ledgerNames = signal<string[]>([]);

/** The page's one clock, the server's time: it ticks only while something on the timeline runs. */
const tick = signal(Date.now());
export const now = computed(() => tick.value + serverClockAhead.value);

/** The thread's runs in creation order: "run 3" is the third. */
export const orderedRuns = computed(() => [...runs.value.values()].sort((a, b) => Date.parse(a.createdAt) - Date.parse(b.createdAt) || (a.id < b.id ? -1 : 1)));
/** The ruler's width in pixels (measured): its labels are spaced by the share of it they take. */
export const rulerWidth = signal(800);
/** An 11 px clock digit (the ruler's font) in pixels, with a margin. */
const RULER_CHAR_PX = 6.2;
export const timeline = computed(() =>
  layoutTimelineWithAxis(orderedRuns.value, audits.value.values(), now.value, zoom.value, (100 * RULER_CHAR_PX) / rulerWidth.value),
);
/** Show only what ended badly: failing rows, and the runs that hold them. */
export const errorsOnly = signal(false);
/** Every row of the timeline, filtered or not (thread totals, the failure count). */
export const allRows = computed(() => timeline.value.rows);
export const rows = computed(() => (errorsOnly.value ? allRows.value.filter((row) => row.failed || (row.kind === 'run' && row.failures !== null)) : allRows.value));
/** Threads whose title holds this text (the thread list's filter, read on the server). */
export const threadFilter = signal('');
const anythingRunning = computed(
  () => rows.value.some((row) => row.running) || Boolean(ledgerPage.value?.entries.some((entry) => entry.cases.includes('RUNNING'))),
);
effect(() => {
  if (!anythingRunning.value) return;
  tick.value = Date.now();
  // Durations are shown to the second and tenth: one tick a second is all the page redraws.
  const timer = setInterval(() => (tick.value = Date.now()), 1000);
  return () => clearInterval(timer);
});

// The server answers again (a request, or a live connection: the open thread's or the Activity
// view's): what an outage or a proxy's error page left on the banner is over. Not only when the
// open thread's connection is live: with no thread open (the thread list, the ledger across
// threads, the Activity view) it never was, and "unreachable; retrying…" stayed for good.
let answersSeen = answers.peek();
effect(() => {
  const answered = answers.value !== answersSeen;
  answersSeen = answers.value;
  const live = connection.value === 'live' || activityConnection.value === 'live';
  if ((answered || live) && pageError.peek() && isTransient(pageError.peek()!)) pageError.value = null;
});

/** Bumped to read the opened audit's payloads again after a failed read. */
const detailRetry = signal(0);
let detailFailures = 0;

/**
 * Reads the opened audit's payloads, again whenever a newer state of it arrives; a failed read is
 * retried, each time a little later (up to 15 s), and at once when the live connection comes back.
 */
effect(() => {
  void connection.value;
  void detailRetry.value;
  const key = selectedKey.value;
  const summary = key ? audits.value.get(key) : undefined;
  if (!key || !summary || !token.value || auditDetails.peek().get(key)?.summary === summary) return;
  void gql(token.value, AUDIT_DETAIL, { id: key }).then(
    ({ audit }) => {
      detailFailures = 0;
      if (audits.peek().get(key) === summary) auditDetails.value = new Map(auditDetails.peek()).set(key, { summary, detail: audit });
    },
    (error: unknown) => {
      const message = error instanceof Error ? error.message : String(error);
      pageError.value = message;
      if (!isTransient(message)) return;
      setTimeout(() => selectedKey.peek() === key && detailRetry.value++, retryAfterMs(detailFailures++));
    },
  );
});

const LEDGER_PAGE = 100;
/**
 * The ledger that shows, if one does: the open thread's (view 'ledger') or, with no thread open,
 * across the caller's threads (home 'ledger'); with the filters.
 */
const ledgerQuery = computed(() => {
  const shown = threadId.value ? view.value === 'ledger' && !auditsHidden.value : home.value === 'ledger';
  return shown ? { threadId: threadId.value, filter: ledgerFilter.value } : null;
});

/**
 * Reads the ledger that shows: as many entries as already show (`more`: one page more), so a
 * refresh never shrinks what the reader scrolled to.
 */
export async function loadLedger(more = false) {
  const query = ledgerQuery.peek();
  if (!token.value || !query) return;
  const forQuery = JSON.stringify(query);
  const current = ledgerPage.peek();
  const shown = current?.forQuery === forQuery ? current.entries.length : 0;
  const wanted = Math.max(LEDGER_PAGE, more ? shown + LEDGER_PAGE : shown);
  const entries: LedgerEntry[] = [];
  let after: string | null = null;
  let hasMore = false;
  // Once inputs are too large for a page of LEDGER_PAGE, the following pages ask for as few.
  let size = LEDGER_PAGE;
  ledgerReadsRunning++;
  try {
    do {
      const { toolCallLedger: page }: ToolCallLedgerQuery = await readFewer(size, (first) => {
        size = first;
        const filter = { name: query.filter.name || null, status: query.filter.status || null, case: query.filter.case || null };
        return gql(token.value!, TOOL_CALL_LEDGER, { threadId: query.threadId, ...filter, first, after });
      });
      entries.push(...page.edges.map((edge) => edge.node));
      hasMore = page.pageInfo.hasNextPage;
      after = page.pageInfo.endCursor ?? null;
    } while (hasMore && entries.length < wanted);
    if (JSON.stringify(ledgerQuery.peek()) !== forQuery) return;
    ledgerFailures = 0;
    ledgerPage.value = { entries, hasMore, error: null, forQuery };
    const names = new Set([...ledgerNames.peek(), ...entries.map((entry) => entry.name)]);
    if (names.size !== ledgerNames.peek().length) ledgerNames.value = [...names].sort();
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    ledgerPage.value = { entries: [], hasMore: false, error: message, forQuery };
    // A read lost on the way is tried again, a little later each time, while the same ledger shows:
    // one retry waits at a time (each failure used to add one more, for ever, while the server was away).
    if (!isTransient(message)) return;
    clearTimeout(ledgerRetry);
    ledgerRetry = setTimeout(() => {
      ledgerRetry = undefined;
      if (JSON.stringify(ledgerQuery.peek()) === forQuery) void loadLedger();
    }, retryAfterMs(ledgerFailures++));
  } finally {
    ledgerReadsRunning--;
  }
}
let ledgerFailures = 0;
let ledgerReadsRunning = 0;
/** The retry of a ledger read lost on the way, while one waits. */
let ledgerRetry: ReturnType<typeof setTimeout> | undefined;
let ledgerTimer: ReturnType<typeof setTimeout> | undefined;
/** The open thread's ledger follows its changes (threadChanges): one read per burst of them. */
function refreshLedgerSoon() {
  if (!ledgerQuery.peek() || ledgerTimer) return;
  ledgerTimer = setTimeout(() => {
    ledgerTimer = undefined;
    void loadLedger();
  }, 300);
}
effect(() => {
  const query = ledgerQuery.value;
  if (!query) return void (ledgerPage.value = null);
  void loadLedger();
  if (query.threadId) return;
  // Across threads there is no one stream to follow (threadChanges is per thread): re-read every
  // two seconds while the view shows (docs/debug-ui.md, "The tool-call ledger"); not while a read
  // is under way or a failed one waits to be tried again (the server away: reads back off).
  const timer = setInterval(() => ledgerReadsRunning === 0 && ledgerRetry === undefined && void loadLedger(), 2000);
  return () => clearInterval(timer);
});

/**
 * Opens a ledger entry's row in its thread's timeline: its execution, else its own row under the
 * model call that declared it, reading the declaring run when that call is not loaded.
 */
export function openLedgerEntry(entry: LedgerEntry) {
  if (threadId.value !== entry.threadId) openThread(entry.threadId);
  // The run read first: a row asked for while no run is read pages back through the thread.
  if (!entry.auditId && !audits.peek().has(entry.declaredById)) void loadRun(entry.runId);
  pendingReveal.value = rowToOpen(entry);
}

/** The most hits one search read asks for; fewer when their errors and usage are over the answer budget. */
const SEARCH_PAGE = 50;
/** Counts the searches started: an answer shows only if no search started after its own (answers may arrive out of order). */
let searchesStarted = 0;

/** The search the box and the filters describe; `forQuery` names it. */
function searchAsked() {
  const text = searchText.value.trim();
  const name = searchName.value.trim() || null;
  const status = searchStatus.value || null;
  const kind = searchKind.value || null;
  const scopedThread = searchScope.value === 'thread' ? threadId.value : null;
  const window = searchWindow.value;
  return { text, name, status, kind, scopedThread, window, forQuery: JSON.stringify([text, name, status, kind, scopedThread, window]) };
}

/**
 * Runs the search the box and the filters describe: its first page (`new`), the next page after
 * the hits shown (`more`), or again as many hits as show (`again`: a live change, so the pages
 * read with `more` stay); a text under three characters waits.
 */
export async function runSearch(read: 'new' | 'more' | 'again' = 'new') {
  const search = ++searchesStarted;
  if (!threadId.value) searchScope.value = 'all';
  const { text, name, status, kind, scopedThread, window, forQuery } = searchAsked();
  if (!token.value || (!text && !status && !name)) return void (searchResults.value = null);
  if (text && text.length < 3) {
    searchResults.value = { hits: [], hasMore: false, error: 'Type at least three characters.', refused: true, forQuery, text, kind };
    return;
  }
  const shown = searchResults.value?.forQuery === forQuery ? searchResults.value.hits : [];
  let hits = read === 'more' ? shown : [];
  let after = read === 'more' ? (shown[shown.length - 1]?.audit.id ?? null) : null;
  searchRunning.value = forQuery;
  try {
    let page: SearchAuditsQuery['searchAudits'];
    do {
      ({ searchAudits: page } = await readFewer(SEARCH_PAGE, (first) =>
        gql(token.value!, SEARCH_AUDITS, { text: text || null, name, status, kind, threadId: scopedThread, since: window?.since ?? null, until: window?.until ?? null, first, after }),
      ));
      if (search !== searchesStarted) return;
      hits = [...hits, ...page.items];
      after = page.items.at(-1)?.audit.id ?? null;
    } while (read === 'again' && page.hasMore && hits.length < shown.length);
    searchResults.value = { hits, hasMore: page.hasMore, error: null, forQuery, text, kind };
  } catch (error) {
    if (search !== searchesStarted) return;
    const refused = error instanceof GraphQLRequestError && error.code === 'BAD_USER_INPUT';
    searchResults.value = { hits: [], hasMore: false, error: error instanceof Error ? error.message : String(error), refused, forQuery, text, kind };
  } finally {
    if (search === searchesStarted) searchRunning.value = null;
  }
}

/** Clear: no results, and the box and its filters empty (the next search starts from none of them), the scope as a search's first. */
export function clearSearch() {
  searchesStarted++;
  batch(() => {
    searchResults.value = null;
    searchRunning.value = null;
    searchWindow.value = null;
    searchText.value = '';
    searchName.value = '';
    searchStatus.value = '';
    searchKind.value = '';
    searchScope.value = threadId.value ? 'thread' : 'all';
  });
}

let researchTimer: ReturnType<typeof setTimeout> | undefined;
/** Shown results follow the open thread's changes: a tool that starts while they show joins them. */
function refreshSearchSoon() {
  if (!searchResults.value || researchTimer) return;
  researchTimer = setTimeout(() => {
    researchTimer = undefined;
    void runSearch('again');
  }, 300);
}

/** Runs whose own entries are being read (loadRun). */
export const loadingRuns = signal<ReadonlySet<string>>(new Set());

/** Opens a search hit in its thread's timeline, reading its run if that is not loaded. */
export function openHit(hit: SearchHit) {
  if (threadId.value !== hit.threadId) openThread(hit.threadId);
  pendingReveal.value = hit.audit.id;
}
// A row asked for (a link, a search hit, a ledger entry) shows in the timeline, whichever view was last used.
effect(() => {
  if (pendingReveal.value) view.value = 'timeline';
});
effect(() => {
  const wanted = pendingReveal.value;
  if (!wanted || !snapshotLoaded.value) return;
  if (audits.value.has(wanted) || runs.value.has(wanted) || allRows.value.some((row) => row.key === wanted)) {
    selectedKey.value = wanted;
    pendingReveal.value = null;
  } else if (loadingRuns.value.size || locating.value) {
    // A run being read may hold it.
  } else if (located !== wanted && !isDeclaredRowKey(wanted)) {
    located = wanted;
    void loadRunOf(wanted);
  } else if (truncated.value) {
    void loadOlder();
  } else if (!loadingOlder.value) {
    rowNotFound.value = wanted;
    pendingReveal.value = null;
  }
});
effect(() => {
  if (selectedKey.value) rowNotFound.value = null;
});

/** The audit whose run was last read for a row asked for, and whether that read is under way. */
let located: string | null = null;
const locating = signal(false);
/** Reads the entries of the run `auditId` belongs to (one run, not the whole thread back to it). */
async function loadRunOf(auditId: string) {
  locating.value = true;
  try {
    const { audit } = await gql(token.value!, AUDIT_RUN, { id: auditId });
    await loadRun(audit.runId);
  } catch {
    // Not an audit this reader may read (or none): paging back answers as it always did.
  } finally {
    locating.value = false;
  }
}

/** The next page back: the audits older than the oldest loaded. */
export async function loadOlder() {
  const thread = threadId.value;
  if (!thread || !olderBefore.value || loadingOlder.value) return;
  loadingOlder.value = true;
  try {
    const page = await readAuditPage(token.value!, thread, olderBefore.value);
    if (threadId.value !== thread) return;
    olderAsked = true;
    audits.value = mergeAudits(audits.value, page.items);
    truncated.value = page.truncated;
    olderBefore.value = page.items[0]?.id ?? null;
  } catch (error) {
    pageError.value = error instanceof Error ? error.message : String(error);
  } finally {
    loadingOlder.value = false;
  }
}

/** The row the last `n` or `p` selected: told to screen readers while it stays selected. */
export const announcedKey = signal<string | null>(null);

/**
 * Why the last `n` or `p` moved nothing (no failure past the selection that way), and how many
 * presses said so (each one is told anew); cleared when the selection moves.
 */
export const failureEdge = signal<{ text: string; presses: number } | null>(null);
effect(() => {
  void selectedKey.value;
  failureEdge.value = null;
});

/**
 * Selects the next (`delta` 1) or previous (-1) row that failed, from the selected row; with none
 * selected, the first or the last. A run whose failures are not loaded is selected while its
 * entries load, then its first (or, going back, last) failing row: one key reaches the call.
 */
export function moveToFailure(delta: 1 | -1) {
  const list = rows.value;
  const index = list.findIndex((row) => row.key === selectedKey.value);
  const order = delta > 0 ? list.slice(index + 1) : list.slice(0, index < 0 ? list.length : index).reverse();
  const next = order.find((row) => row.failed);
  if (!next) {
    failureEdge.value = { text: delta > 0 ? 'No more failures after this row.' : 'No failures before this row.', presses: (failureEdge.peek()?.presses ?? 0) + 1 };
    return;
  }
  selectedKey.value = announcedKey.value = next.key;
  if (next.kind !== 'run' || next.unloaded === 0) return;
  void loadRun(next.key).then(() => {
    if (selectedKey.peek() !== next.key) return;
    const after = rows.peek();
    const start = after.findIndex((row) => row.key === next.key);
    const end = after.findIndex((row, at) => at > start && row.kind === 'run');
    const failing = after.slice(start + 1, end < 0 ? after.length : end).filter((row) => row.failed);
    const target = delta > 0 ? failing[0] : failing[failing.length - 1];
    if (target) selectedKey.value = announcedKey.value = target.key;
  });
}


/** Reads all of one run's entries (pages of 500, newest first), for a run whose entries are not all loaded. */
export async function loadRun(runId: string) {
  const thread = threadId.value;
  if (!thread || !token.value || loadingRuns.value.has(runId)) return;
  loadingRuns.value = new Set([...loadingRuns.value, runId]);
  try {
    let before: string | null = null;
    do {
      const page = await readAuditPage(token.value, thread, before, runId);
      if (threadId.value !== thread) return;
      olderAsked = true;
      audits.value = mergeAudits(audits.value, page.items);
      before = page.truncated ? (page.items[0]?.id ?? null) : null;
    } while (before);
  } catch (error) {
    pageError.value = error instanceof Error ? error.message : String(error);
  } finally {
    const left = new Set(loadingRuns.value);
    left.delete(runId);
    loadingRuns.value = left;
  }
}

/** Moves the selection `delta` rows (of those in view), from the selected row or the first. */
export function moveSelection(delta: number | 'first' | 'last') {
  const list = rows.value.filter((row) => row.inView);
  if (!list.length) return;
  const index = list.findIndex((row) => row.key === selectedKey.value);
  const next =
    delta === 'first' ? 0
    : delta === 'last' ? list.length - 1
    : index < 0 ? (delta > 0 ? 0 : list.length - 1)
    : Math.min(list.length - 1, Math.max(0, index + delta));
  selectedKey.value = list[next]!.key;
}

let client: Client | null = null;
let stopFollowing: (() => void) | null = null;

/** Signs in with a token (pastedToken has taken it out of what was pasted). */
export function signIn(pasted: string) {
  storeToken(pasted);
  token.value = pasted;
  tokenRefusal.value = null;
  pageError.value = null;
  void loadThreads('start');
  followLocation();
}

export function signOut() {
  closeThread();
  endSession();
}

function endSession() {
  void client?.dispose();
  client = null;
  storeToken(null);
  token.value = null;
  threads.value = [];
  threadsRead.value = false;
  threadsCount.value = '';
  threadsNews.value = '';
}

// A refused token ends the session where it stands: the address keeps the open thread or view,
// so signing in again returns there.
effect(() => {
  if (!tokenRefusal.value) return;
  resetThread();
  endSession();
});

function liveClient(): Client {
  client ??= createLiveClient(token.value!, (state) => (connection.value = state));
  return client;
}

/** Counts the thread-list reads started: an answer shows only if no read started after its own (a slower, older filter's answer is dropped). */
let threadReadsStarted = 0;
let threadReadsRunning = 0;
/** The last failure of a thread-list read: a later read that succeeds takes it off the banner. */
let threadsError: string | null = null;
const THREADS_PAGE = 20;
/** The most threads one read returns (the API's bound): a refresh reads the newest this many, the rows beyond stay as read. */
export const MAX_THREADS_READ = 100;
/** How often the thread list is read again while it shows. */
export const THREADS_REFRESH_MS = 5000;
/** When the rows beyond the newest MAX_THREADS_READ were read (the oldest of their reads), or null when the list has none. */
export const threadsBeyondReadAt = signal<number | null>(null);

/** Whether thread `a` comes after thread `b` in the list's order (newest first: created, then id, descending). */
const listedAfter = (a: ThreadItem, b: ThreadItem) => a.createdAt < b.createdAt || (a.createdAt === b.createdAt && a.id < b.id);

/**
 * The first page of threads (`start`), the next one (`more`), again the newest as many as show
 * up to MAX_THREADS_READ (`refresh`, the rows beyond kept as read), or every row shown again in
 * reads of MAX_THREADS_READ (`all`, a reader's request).
 */
export async function loadThreads(from: 'start' | 'more' | 'refresh' | 'all') {
  const shown = threads.peek();
  if (from === 'refresh' && threadReadsRunning > 0) return;
  const read = ++threadReadsStarted;
  threadReadsRunning++;
  try {
    const title = threadFilter.peek().trim() || null;
    const wanted = from === 'start' || from === 'more' ? THREADS_PAGE : Math.max(THREADS_PAGE, shown.length);
    let nodes: ThreadItem[] = [];
    let after = from === 'more' ? threadsCursor.peek() : null;
    let page: ThreadsQuery['threads'];
    do {
      const first = Math.min(MAX_THREADS_READ, wanted - nodes.length);
      ({ threads: page } = await gql(token.value!, THREADS, { first, after, title }));
      if (read !== threadReadsStarted) return;
      nodes = [...nodes, ...page.edges.map((edge) => edge.node)];
      after = page.pageInfo.endCursor;
    } while (from === 'all' && page.pageInfo.hasNextPage && nodes.length < wanted);
    // A refresh of the newest keeps the rows shown after its last (a thread deleted among the newest is gone).
    const last = nodes.at(-1);
    const beyond = from === 'refresh' && last && page.pageInfo.hasNextPage ? shown.filter((thread) => listedAfter(thread, last)) : [];
    const list = from === 'more' ? [...shown, ...nodes] : [...nodes, ...beyond];
    batch(() => {
      threads.value = list;
      threadsRead.value = true;
      threadsCount.value = list.length ? threadsShownText(list.length, page.totalCount, title) : '';
      if (from !== 'refresh') threadsNews.value = threadsCount.value || (title ? `No thread with “${title}” in the title` : '');
      if (beyond.length === 0) {
        threadsCursor.value = page.pageInfo.endCursor;
        threadsHaveMore.value = page.pageInfo.hasNextPage;
      }
      threadsBeyondReadAt.value = list.length <= MAX_THREADS_READ ? null : from === 'all' ? Date.now() : (threadsBeyondReadAt.peek() ?? Date.now());
    });
    // Only the list's own failure: the open thread's (read at the same time) stays on the banner.
    if (pageError.peek() === threadsError) pageError.value = null;
  } catch (error) {
    if (read !== threadReadsStarted) return;
    pageError.value = threadsError = error instanceof Error ? error.message : String(error);
  } finally {
    threadReadsRunning--;
  }
}

/** "20 of 3,000 threads", "2 of 2 threads with “inv” in the title": what the list shows of what its filter matches. */
const threadsShownText = (shown: number, total: number, title: string | null) =>
  `${shown.toLocaleString('en')} of ${threadCountLabel(total)} thread${total === 1 ? '' : 's'}${title ? ` with “${title}” in the title` : ''}`;

// The thread list has no stream to follow (changes are per thread): while it shows, it is read
// again, as many threads as show, so new threads and their runs' statuses appear.
effect(() => {
  if (!token.value || threadId.value || home.value !== 'threads' || isActivityHash(hash.value)) return;
  const timer = setInterval(() => void loadThreads('refresh'), THREADS_REFRESH_MS);
  return () => clearInterval(timer);
});

let threadFilterTimer: ReturnType<typeof setTimeout> | undefined;
/** The thread list's title filter, read on the server (threads(title:)) a moment after the last keystroke. */
export function filterThreads(text: string) {
  threadFilter.value = text;
  clearTimeout(threadFilterTimer);
  threadFilterTimer = setTimeout(() => void loadThreads('start'), 200);
}

/**
 * Opens a thread (and a row of it), its address pushed unless the address already names it (a
 * link followed): one history entry per thread opened, so Back returns to where the reader came
 * from, the home view (threads or the ledger across threads) as it was.
 */
export function openThread(id: string, audit: string | null = null) {
  resetThread();
  linkNotUnderstood.value = null;
  // The row first: with the thread alone, the address effect below would rewrite the address to
  // the thread without its row, and the push below would then add a second entry.
  pendingReveal.value = audit;
  threadId.value = id;
  // A link followed (the Activity view's, Back) has its entry already: the address effect adds what
  // it lacks (the search shown) to it. Pushed, it was a second entry of the thread, and Back stayed there.
  if (!location.hash.startsWith(`#thread=${id}`)) history.pushState(null, '', untracked(() => threadAddress(id, audit)));
  // Results of "this thread" are the open thread's: read again for this one.
  if (searchResults.peek() && searchScope.peek() === 'thread') void runSearch();
  const client = liveClient();
  runReads = readsSoon(
    client,
    async (run) => {
      const read = await readRun(client, token.value!, run);
      if (read && threadId.peek() === id) runs.value = mergeRuns(runs.value, [read]);
    },
    (error) => (pageError.value = messageOf(error)),
  );
  stopFollowing = followThread(client, token.value!, id, {
    thread: (info) => (threadInfo.value = info),
    runs: (list) => {
      runs.value = mergeRuns(runs.value, list);
      pageError.value = null;
    },
    run: (run) => {
      pendingRuns.push(run);
      applyChangesSoon();
    },
    audits: (items, isTruncated) => {
      threadReadError.value = null;
      audits.value = mergeAudits(audits.value, items);
      truncated.value = isTruncated;
      olderBefore.value = items[0]?.id ?? null;
      snapshotLoaded.value = true;
    },
    audit: (audit) => {
      pendingAudits.push(audit);
      applyChangesSoon();
    },
    auditsHidden: (reason) => {
      auditsHidden.value = reason;
      snapshotLoaded.value = true;
    },
    failed: (message) => {
      pageError.value = message;
      if (!snapshotLoaded.peek()) threadReadError.value = message;
    },
    gone: () => {
      threadGone.value = true;
      stopFollowing = null;
      forgetSearchHitsOf(id);
    },
  });
}

/** A thread found gone (deleted while open) leaves nothing of it on the page: its search hits go too. */
function forgetSearchHitsOf(gone: string) {
  const results = searchResults.peek();
  if (results) searchResults.value = { ...results, hits: results.hits.filter((hit) => hit.threadId !== gone) };
}

/**
 * The open thread's live changes not applied yet. They are applied together a moment after the
 * first: a burst of them (runs streaming in) costs one copy of the maps and one layout of the
 * timeline, not one per change.
 */
let pendingRuns: RunView[] = [];
let pendingAudits: AuditView[] = [];
let changesTimer: ReturnType<typeof setTimeout> | undefined;
const APPLY_CHANGES_MS = 100;

function applyChangesSoon() {
  changesTimer ??= setTimeout(applyChanges, APPLY_CHANGES_MS);
}

function applyChanges() {
  changesTimer = undefined;
  const [changedRuns, changedAudits] = [pendingRuns, pendingAudits];
  [pendingRuns, pendingAudits] = [[], []];
  const before = allRows.peek();
  // A run with entries not loaded counts them by its summary, which its entries' changes do not
  // carry: read again as its entries stream in, else each new one would count as an old one loaded.
  const countedBySummary = new Set(before.flatMap((row) => (row.kind === 'run' && row.unloaded > 0 ? [row.key] : [])));
  const stale = new Set(changedAudits.map((audit) => audit.runId).filter((runId) => countedBySummary.has(runId)));
  batch(() => {
    if (changedRuns.length) runs.value = mergeRuns(runs.value, changedRuns);
    if (changedAudits.length) audits.value = mergeAudits(audits.value, changedAudits);
    for (const runId of keepNewestAudits()) stale.add(runId);
  });
  runReads?.soon(stale);
  noteLiveNews(before, allRows.peek());
  if (changedAudits.length) refreshSearchSoon();
  refreshLedgerSoon();
}

/**
 * The most entries the open thread holds as they stream in. Past it, the newest AUDITS_PAGE stay
 * (as when the thread opens) and the older ones are not loaded, a click away: a page left open on
 * a run writing for hours keeps its memory and its layout's work bounded.
 */
const LIVE_AUDITS_MAX = 1000;

/** The reader asked for older entries (Load older entries, a run's load, a link to an old row): they stay. */
let olderAsked = false;

/** The keys of the rows drawn (those in sight, and a few around them), and whether the reader is at the newest rows: set by the view showing them. */
export const rowsInSight = signal<{ keys: readonly string[]; atNewest: boolean }>({ keys: [], atNewest: true });

/**
 * The entries rows `keys` show where they are: an entry's own, with the model call that declared
 * it (a tool sits under it); a declared call's model call.
 */
function entriesShowing(held: ReadonlyMap<string, AuditView>, keys: readonly string[]): Set<string> {
  const declared = new Set(keys.filter(isDeclaredRowKey));
  const models = declared.size ? [...held.values()].filter((audit) => audit.toolCalls?.some((call) => declared.has(declaredRowKey(call.id)))) : [];
  return new Set([...keys.flatMap((key) => [key, held.get(key)?.declaredBy?.id ?? '']), ...models.map((model) => model.id)].filter((id) => held.has(id)));
}

/**
 * Past LIVE_AUDITS_MAX, keeps the newest AUDITS_PAGE entries (and the selected row's), unless the
 * reader asked for older ones or reads rows that would go (scrolled up to them: they stay in place
 * until the reader is back at the newest). Returns the runs that lost entries.
 */
function keepNewestAudits(): Set<string> {
  const held = audits.peek();
  if (held.size <= LIVE_AUDITS_MAX || olderAsked) return new Set();
  // Ids grow in the order threadAudits pages by (`before`): the newest are the greatest.
  const newest = [...held.keys()].sort().slice(-AUDITS_PAGE);
  const kept = new Set(newest);
  // Rows above the reader's would go from under them (the view moves): none go until the reader is back at the newest.
  const { keys, atNewest } = rowsInSight.peek();
  if (!atNewest || [...entriesShowing(held, keys)].some((id) => !kept.has(id))) return new Set();
  for (const id of entriesShowing(held, [selectedKey.peek() ?? ''])) kept.add(id);
  const dropped = new Set([...held.values()].flatMap((audit) => (kept.has(audit.id) ? [] : [audit.runId])));
  audits.value = new Map([...held].filter(([id]) => kept.has(id)));
  auditDetails.value = new Map([...auditDetails.peek()].filter(([id]) => kept.has(id)));
  truncated.value = true;
  olderBefore.value = newest[0]!;
  return dropped;
}

/** The open thread's runs whose summaries are read again a moment after their entries change. */
let runReads: ReturnType<typeof readsSoon<string>> | null = null;

/**
 * What the live stream changed, told to screen readers (a polite status): the rows that failed,
 * the runs that ended, how many rows were added. Told at most every NEWS_EVERY_MS, what came
 * meanwhile in one summary, so a run writing ten entries a second is not read out entry by entry.
 */
export const liveNews = signal<{ text: string; told: number } | null>(null);
const NEWS_EVERY_MS = 5000;
let news: { failed: Row[]; ended: Row[]; added: number } = { failed: [], ended: [], added: 0 };
let newsTimer: ReturnType<typeof setTimeout> | undefined;
let newsToldAt = -Infinity;

function noteLiveNews(before: readonly Row[], after: readonly Row[]) {
  const was = new Map(before.map((row) => [row.key, row]));
  for (const row of after) {
    const old = was.get(row.key);
    if (row.failed && !old?.failed) news.failed.push(row);
    else if (row.kind === 'run' && old?.running && !row.running) news.ended.push(row);
  }
  news.added += Math.max(0, after.length - before.length);
  if (news.failed.length || news.ended.length || news.added) newsTimer ??= setTimeout(tellNews, Math.max(0, newsToldAt + NEWS_EVERY_MS - Date.now()));
}

function tellNews() {
  newsTimer = undefined;
  const { failed, ended, added } = news;
  news = { failed: [], ended: [], added: 0 };
  const ending = (row: Row) => `${row.label} ${row.awaitingVerdict ? 'reported an error' : row.status.toLowerCase().replace(/_/g, ' ')}${row.reason ? `: ${row.reason}` : ''}`;
  const more = failed.length - 1;
  const parts = [
    failed[0] && `${ending(failed[0])}${more ? ` (and ${more} more failure${more === 1 ? '' : 's'})` : ''}`,
    ...ended.map(ending),
    added && `${added} new row${added === 1 ? '' : 's'}`,
  ].filter(Boolean);
  newsToldAt = Date.now();
  liveNews.value = { text: markedText(`${parts.join('. ')}.`), told: (liveNews.peek()?.told ?? 0) + 1 };
}

export function closeThread() {
  resetThread();
  linkNotUnderstood.value = null;
  if (location.hash.startsWith('#thread=')) history.pushState(null, '', location.pathname + addressNow());
}

/** Stops following the open thread and forgets it; the address stays. */
function resetThread() {
  stopFollowing?.();
  stopFollowing = null;
  clearTimeout(changesTimer);
  changesTimer = undefined;
  runReads?.stop();
  runReads = null;
  olderAsked = false;
  clearTimeout(newsTimer);
  newsTimer = undefined;
  news = { failed: [], ended: [], added: 0 };
  liveNews.value = null;
  [pendingRuns, pendingAudits] = [[], []];
  threadId.value = null;
  threadInfo.value = null;
  runs.value = new Map();
  audits.value = new Map();
  truncated.value = false;
  olderBefore.value = null;
  snapshotLoaded.value = false;
  threadReadError.value = null;
  located = null;
  ledgerPage.value = null;
  ledgerNames.value = [];
  zoom.value = null;
  auditDetails.value = new Map();
  auditsHidden.value = null;
  threadGone.value = false;
  selectedKey.value = null;
  rowNotFound.value = null;
}

/** The address of a thread, or of one of its rows: `#thread=…&audit=…` (audit or run id), `&errors` with 'Errors only' pressed. */
export const linkTo = (thread: string, row: string | null, errors = false) => `#thread=${thread}${row ? `&audit=${row}` : ''}${errors ? '&errors' : ''}`;

/** A search as the address holds it (`q`, `name`, `status`, `kind`, `since` and `until`, and `in=all` for one across threads with a thread open). */
export interface SearchLink {
  text: string;
  name: string;
  status: AuditStatus | '';
  kind: AuditKind | '';
  all: boolean;
  window: SearchWindow | null;
}
const AUDIT_STATUSES: readonly string[] = ['RUNNING', 'COMPLETED', 'FAILED', 'CANCELLED', 'INTERRUPTED', 'ABANDONED'];
const AUDIT_KINDS: readonly string[] = ['TOOL', 'MODEL'];

/**
 * What an address names: a thread (its row, `Errors only`) and a search, each optional; null for
 * neither (the home view), 'not understood' for an address that is no link of this page.
 */
export function linkOf(address: string): { thread: string | null; row: string | null; errors: boolean; calls: boolean; search: SearchLink | null; window: TimeWindow | null } | null | 'not understood' {
  if (!address || address === '#') return null;
  let fields = address.slice(1);
  // Mail scanners and chat apps rewriting links percent-encode the whole fragment (`thread%3D…`).
  if (!fields.includes('=') && /%3d/i.test(fields)) {
    try {
      fields = decodeURIComponent(fields);
    } catch {
      return 'not understood';
    }
  }
  const params = new URLSearchParams(fields);
  const [thread, row] = [params.get('thread'), params.get('audit')];
  if (thread !== null && !/^[0-9a-f-]{36}$/i.test(thread)) return 'not understood';
  if (row !== null && (thread === null || !/^(declared:)?[0-9a-f-]{36}$/i.test(row))) return 'not understood';
  const [text, name, status, kind] = [params.get('q') ?? '', params.get('name') ?? '', params.get('status') ?? '', params.get('kind') ?? ''];
  // A search's window: `since` and `until` as ISO times, both or neither, with a search.
  const [since, until] = [params.get('since'), params.get('until')];
  const searchWindow = since === null || until === null ? null : { since: Date.parse(since), until: Date.parse(until) };
  if ((since === null) !== (until === null) || (searchWindow && !(searchWindow.until > searchWindow.since))) return 'not understood';
  const search = text || name || status
    ? {
        text, name, status: (AUDIT_STATUSES.includes(status) ? status : '') as AuditStatus | '', kind: (AUDIT_KINDS.includes(kind) ? kind : '') as AuditKind | '',
        all: params.get('in') === 'all',
        window: searchWindow && { since: new Date(searchWindow.since).toISOString(), until: new Date(searchWindow.until).toISOString() },
      }
    : null;
  const calls = params.has('calls');
  if (!thread && !search && !calls) return 'not understood';
  if (searchWindow && !search) return 'not understood';
  // A zoom: `from` and `to` as ISO times, both or neither, within a thread.
  const [from, to] = [params.get('from'), params.get('to')];
  const window = from === null || to === null ? null : { from: Date.parse(from), to: Date.parse(to) };
  if ((from === null) !== (to === null) || (window && (!thread || !(window.to > window.from)))) return 'not understood';
  return { thread, row, errors: params.has('errors'), calls, search, window };
}

/** The search being read (its forQuery) until its results show. */
const searchRunning = signal<string | null>(null);
/** The address's search part (`&q=…`) for the search shown or being read, or '' with none. */
const searchAddress = computed(() => {
  const forQuery = searchRunning.value ?? searchResults.value?.forQuery;
  if (!forQuery) return '';
  const [text, name, status, kind, scopedThread, window] = JSON.parse(forQuery) as [string, string | null, string | null, string | null, string | null, SearchWindow | null];
  const params = new URLSearchParams();
  if (text) params.set('q', text);
  if (name) params.set('name', name);
  if (status) params.set('status', status);
  if (kind) params.set('kind', kind);
  if (window) {
    params.set('since', window.since);
    params.set('until', window.until);
  }
  if (threadId.value && !scopedThread) params.set('in', 'all');
  return `&${params.toString()}`;
});

/** The address's zoom part (`&from=…&to=…`, ISO times) for the span shown, or '' for the whole thread. */
const zoomAddress = () => (zoom.value ? `&from=${new Date(zoom.value.from).toISOString()}&to=${new Date(zoom.value.to).toISOString()}` : '');

/** The address of a thread (a row of it) as it shows: `Errors only`, its tool-call ledger (`&calls`), the zoom, the search shown. */
export const threadAddress = (thread: string, row: string | null) =>
  linkTo(thread, row, errorsOnly.value) + (view.value === 'ledger' ? '&calls' : '') + zoomAddress() + searchAddress.value;

/** The address of what shows: the open thread, or the home view (`#calls` for the ledger across threads) and the search shown. */
const addressNow = () => {
  const thread = threadId.value;
  if (thread) return threadAddress(thread, selectedKey.value);
  const parts = (home.value === 'ledger' ? '&calls' : '') + searchAddress.value;
  return parts ? `#${parts.slice(1)}` : '';
};

/** Shows the search a link names, unless it shows already. */
function followSearch(search: SearchLink) {
  searchText.value = search.text;
  searchName.value = search.name;
  searchStatus.value = search.status;
  searchKind.value = search.kind;
  searchWindow.value = search.window;
  searchScope.value = search.all || !threadId.value ? 'all' : 'thread';
  if (searchResults.peek()?.forQuery !== searchAsked().forQuery) void runSearch();
}

/** The address followed last, when it is no link of this page (cut short, or text added when it was shared): said on the page. */
export const linkNotUnderstood = signal<string | null>(null);

/**
 * Opens the thread and the row named in the URL (ids are not secrets; the token never goes
 * there): the thread scrolled to that row with it open, once loaded.
 */
/** The address has been read since the page loaded: until then, it is not written over. */
const addressRead = signal(false);

/** Follows the address (in one batch: the address effect sees the state it names, never a step on the way). */
function followLocation() {
  batch(followAddress);
}

function followAddress() {
  addressRead.value = true;
  linkNotUnderstood.value = null;
  // The Activity view (activity.tsx) keeps its own state in the hash: no thread is open there.
  if (isActivityHash(location.hash)) return closeThread();
  const link = linkOf(location.hash);
  // Said, and the address left as followed (no entry pushed: Back leaves it as any other).
  if (link === 'not understood') return void (resetThread(), (linkNotUnderstood.value = location.hash));
  if (link) {
    errorsOnly.value = link.errors;
    if (link.thread) view.value = link.calls ? 'ledger' : 'timeline';
    else home.value = link.calls ? 'ledger' : 'threads';
  }
  if (link?.thread && link.thread === threadId.value) {
    if (link.row && link.row !== selectedKey.value) pendingReveal.value = link.row;
  } else if (link?.thread) openThread(link.thread, link.row);
  else closeThread();
  if (link?.thread) zoom.value = link.window;
  if (link?.search) followSearch(link.search);
}

// The address follows the selected row, 'Errors only' and the search shown, so it can be copied and
// shared (replaced, not pushed: Back leaves the thread). Not on the Activity view, nor over a link not understood.
effect(() => {
  const thread = threadId.value;
  const address = addressNow();
  if (!token.value || !addressRead.value || pendingReveal.value || linkNotUnderstood.value || isActivityHash(location.hash)) return;
  if (thread ? !location.hash.startsWith(`#thread=${thread}`) : location.hash.startsWith('#thread=')) return;
  if (location.hash !== address) history.replaceState(null, '', location.pathname + address);
});

export function restore() {
  addEventListener('hashchange', () => token.value && followLocation());
  if (!token.value) return;
  void loadThreads('start');
  followLocation();
}
