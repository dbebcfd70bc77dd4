import { render, type ComponentChildren } from 'preact';
import { computed, effect, signal, useSignal } from '@preact/signals';
import { useEffect, useLayoutEffect, useMemo, useRef } from 'preact/hooks';
import 'jsondiffpatch/formatters/styles/html.css';
import './style.css';
import {
  rowsInSight,
  auditDetails,
  audits,
  home,
  ledgerFilter,
  ledgerNames,
  ledgerPage,
  loadLedger,
  openLedgerEntry,
  view,
  openHit,
  runSearch,
  clearSearch,
  searchResults,
  searchScope,
  searchKind,
  searchStatus,
  searchText,
  searchWindow,
  auditsHidden,
  loadOlder,
  loadingOlder,
  moveSelection,
  olderBefore,
  orderedRuns,
  timeline,
  zoom,
  claims,
  closeThread,
  connection,
  loadThreads,
  filterThreads,
  now,
  openThread,
  pageError,
  restore,
  rows,
  selectedKey,
  snapshotLoaded,
  threadReadError,
  announcedKey,
  signIn,
  signOut,
  threadId,
  threadInfo,
  failureEdge,
  threads,
  threadsRead,
  threadsHaveMore,
  threadsBeyondReadAt,
  threadsCount,
  threadsNews,
  MAX_THREADS_READ,
  THREADS_REFRESH_MS,
  token,
  truncated,
  allRows,
  rulerWidth,
  errorsOnly,
  linkTo,
  threadAddress,
  linkNotUnderstood,
  rowNotFound,
  loadRun,
  loadingRuns,
  moveToFailure,
  threadFilter,
  threadGone,
  searchName,
  searchedText,
  liveNews,
  type AuditDetail,
  type SearchHit,
  type ThreadItem,
} from './store.js';
import type { AuditKind, AuditStatus, ToolCallLedgerCase } from './generated/graphql/graphql.js';
import { conversationOf, type ConversationMessage } from '../../src/shared/llm-payloads.js';
import { LEDGER_CASE_LABELS, LEDGER_STATUSES, leaseLeftMs, rowToOpen, shownDurationMs } from './ledger.js';
import { addTokens, dateTimeLabel, failuresText, formatBytes, formatDuration, gapsNear, markedText, payloadText, runLabel, shortId, snippetOf, utcOffsetLabel, withInvisibleMarked, type Axis, type Row, type Tokens } from './timeline.js';
import { Activity, activityConnection, activityTitle, hash, isActivityHash } from './activity.js';
import { GRAPHQL_URL, pastedToken, tokenRefusal } from './api.js';
import { focusFirstNewIfLost, focusRows, focusRowsIfLost, focusRowsOnceDrawn, useFocusedHeading } from './focus.js';
import { revealed } from './revealed.js';

/**
 * A link's click, followed in this page; with Ctrl, Cmd, Shift or Alt (a new tab, a window, a
 * download), or another button, left to the browser, which opens the link's address.
 */
const inPage = (follow: () => void) => (event: MouseEvent) => {
  if (event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey || event.altKey) return;
  event.preventDefault();
  follow();
};

/** A sentence ends with a full stop (a server's message may not). */
const sentence = (text: string) => (/[.!?…]$/.test(text) ? text : `${text}.`);

function SignIn() {
  const draft = useSignal('');
  const refusal = useSignal<string | null>(null);
  const heading = useFocusedHeading();
  return (
    <main>
      <form
        class="sign-in"
        onSubmit={(event) => {
          event.preventDefault();
          if (!draft.value.trim()) return;
          const pasted = pastedToken(draft.value);
          refusal.value = 'refusal' in pasted ? pasted.refusal : null;
          if ('token' in pasted) signIn(pasted.token);
        }}
      >
        <h1 ref={heading} tabIndex={-1}>Agent audit timeline</h1>
        {(refusal.value || tokenRefusal.value) && (
          <p class="banner error" role="alert">
            {refusal.value ?? <>The server refused the token: {sentence(tokenRefusal.value!)} Sign in again with a new one.</>}
          </p>
        )}
        <label for="token">Bearer token</label>
        <p id="token-help">
          Paste a bearer token (the one <code>npm start</code> prints, or <code>npm run token -- --sub you --role superadmin</code>).
          It stays in this tab only.
        </p>
        <textarea id="token" name="token" aria-describedby="token-help" rows={4} value={draft.value} onInput={(e) => (draft.value = e.currentTarget.value)} />
        <button type="submit">Sign in</button>
      </form>
    </main>
  );
}

/** The live connection of what shows: the Activity view's, or the open thread's (null on neither). */
const shownConnection = computed(() => (isActivityHash(hash.value) ? activityConnection.value : threadId.value && !threadGone.value ? connection.value : null));

/**
 * What a screen reader is told of the connection: that it dropped, and that it is live again, once
 * each (not its first connecting, nor each retry: the state stays "reconnecting" through them).
 */
const connectionNews = signal('');
let previousConnection: string | null = null;
effect(() => {
  const state = shownConnection.value;
  if (state === 'reconnecting' && previousConnection !== 'reconnecting') connectionNews.value = 'Connection lost; reconnecting…';
  else if (state === 'live' && previousConnection === 'reconnecting') connectionNews.value = 'Live again.';
  else if (state !== 'reconnecting' && state !== 'live') connectionNews.value = '';
  previousConnection = state;
});

function Header() {
  const state = shownConnection.value;
  return (
    <header>
      <strong>Agent audit timeline</strong>
      <span class="who">
        {claims.value ? `${claims.value.sub} (${claims.value.role})` : 'unknown token'}
      </span>
      {state && (
        <span class={`connection ${state}`} data-testid="connection">
          {state === 'live' ? 'live' : state === 'reconnecting' ? 'reconnecting…' : 'connecting…'}
        </span>
      )}
      <span class="visually-hidden" role="status" data-testid="connection-news">{connectionNews.value}</span>
      {claims.value?.role === 'superadmin' && <a href="#activity">Activity</a>}
      <a href={GRAPHQL_URL} target="_blank" rel="noreferrer">GraphiQL</a>
      <button onClick={signOut}>Sign out</button>
    </header>
  );
}

const AUDIT_STATUSES: AuditStatus[] = ['RUNNING', 'COMPLETED', 'FAILED', 'CANCELLED', 'INTERRUPTED', 'ABANDONED'];

/** Finds audits by tool or model name, status, and text in inputs, outputs and errors. */
function SearchBox() {
  if (auditsHidden.value || claims.value?.role !== 'superadmin') return null;
  return (
    <form
      class="search"
      role="search"
      onSubmit={(event) => {
        event.preventDefault();
        void runSearch();
      }}
    >
      <input
        type="search"
        name="q"
        aria-label="Search audits"
        aria-invalid={searchResults.value?.refused ? 'true' : undefined}
        aria-describedby={searchResults.value?.refused ? 'search-error' : undefined}
        placeholder="Search tool and model names, inputs, outputs, errors"
        value={searchText.value}
        onInput={(e) => (searchText.value = e.currentTarget.value)}
      />
      <input
        type="text"
        name="name"
        class="search-name"
        aria-label="Tool or model name (exact)"
        placeholder="tool or model name"
        value={searchName.value}
        onInput={(e) => (searchName.value = e.currentTarget.value)}
      />
      <select aria-label="Kind" value={searchKind.value} onChange={(e) => ((searchKind.value = e.currentTarget.value as AuditKind | ''), void runSearch())}>
        <option value="">tool and model calls</option>
        <option value="TOOL">tool calls</option>
        <option value="MODEL">model calls</option>
      </select>
      <select aria-label="Status" value={searchStatus.value} onChange={(e) => ((searchStatus.value = e.currentTarget.value as AuditStatus | ''), void runSearch())}>
        <option value="">any status</option>
        {AUDIT_STATUSES.map((status) => (
          <option key={status} value={status}>{status.toLowerCase()}</option>
        ))}
      </select>
      {threadId.value && (
        <select aria-label="Where" value={searchScope.value} onChange={(e) => ((searchScope.value = e.currentTarget.value as 'thread' | 'all'), void runSearch())}>
          <option value="thread">this thread</option>
          <option value="all">all my threads</option>
        </select>
      )}
      <button type="submit">Search</button>
      {searchResults.value && <button type="button" onClick={clearSearch}>Clear</button>}
    </form>
  );
}

function SearchResults() {
  const results = searchResults.value;
  // Always in the page, unnamed and empty until a search answers: a status added with its text is not read out.
  if (!results) return <section class="search-results idle" data-testid="search-results"><p key="count" class="muted" role="status" /></section>;
  return (
    <section class="search-results" aria-label="Search results" data-testid="search-results">
      {results.error && <p class="banner error" role="alert" id="search-error">{results.error}</p>}
      {searchWindow.value && (
        <p class="search-window" data-testid="search-window">
          Started (as the server recorded it) from <time dateTime={searchWindow.value.since}>{dateTimeLabel(searchWindow.value.since)}</time> to{' '}
          <time dateTime={searchWindow.value.until}>{dateTimeLabel(searchWindow.value.until)}</time>{' '}
          <button type="button" onClick={() => ((searchWindow.value = null), void runSearch())}>Any time</button>
        </p>
      )}
      <p key="count" class="muted" role="status">
        {results.error ? '' : results.hits.length === 0 ? 'No audit matches.' : `${results.hits.length}${results.hasMore ? '+' : ''} matching ${HIT_NOUNS[results.kind ?? 'ANY']}${results.hits.length === 1 && !results.hasMore ? '' : 's'}${HIT_ORDERS[results.kind ?? 'ANY']}`}
      </p>
      <ul>
        {rankHits(results.hits).map((hit) => (
          <li key={hit.audit.id} data-audit-id={hit.audit.id}>
            {/* In the thread shown, the hit's row takes the focus (the results stay); another thread's heading takes it, as any thread opened does. */}
            <a href={linkTo(hit.threadId, hit.audit.id)} onClick={inPage(() => (hit.threadId === threadId.value && focusRowsOnceDrawn(), openHit(hit)))}>
              {marked(hit.audit.__typename === 'ToolAudit' ? `tool ${hit.audit.name} (${hit.audit.toolCallId})` : `model ${hit.audit.model ?? ''} (${hit.audit.operationId})`, results.text)}
            </a>
            <span class={`status ${hit.audit.status}`}>{hit.audit.status}</span>
            <span class="muted">
              {' '}in <bdi>{revealed(hit.threadTitle || hit.threadId)}</bdi> · <span class="hit-run">{hit.threadId === threadId.value ? runLabel(orderedRuns.value, hit.audit.runId) : `run ${shortId(hit.audit.runId)}`}</span>
              {hit.audit.startedAt && ` · ${dateTimeLabel(hit.audit.startedAt)}`}
            </span>
            {(hit.snippet ?? hit.audit.error != null) && (
              <div class="snippet" title={markedText(hit.snippet ?? JSON.stringify(hit.audit.error))} data-testid="snippet">
                {marked(hit.snippet ?? snippetOf(JSON.stringify(hit.audit.error), results.text), results.text)}
              </div>
            )}
          </li>
        ))}
      </ul>
      {results.hasMore && (
        <button data-testid="search-more" onClick={() => void runSearch('more').then(() => focusFirstNewIfLost('[data-testid=search-results]', 'data-audit-id', new Set(results.hits.map((hit) => hit.audit.id))))}>
          Next results
        </button>
      )}
    </section>
  );
}

/** What the hits are, by the kind searched for (singular), and the order rankHits gives them. */
const HIT_NOUNS = { ANY: 'audit', TOOL: 'tool call', MODEL: 'model call' } as const;
const HIT_ORDERS = { ANY: ': tools and errors first, then model calls, each newest first', TOOL: ', newest first', MODEL: ': those with an error first, each newest first' } as const;

/**
 * Tools and errors before model calls that merely carry the text (a model call's input holds the
 * whole history, so it matches whatever its conversation mentions); newest first within each.
 */
const rankHits = (hits: SearchHit[]) =>
  [...hits].sort((a, b) => rankOf(a) - rankOf(b));
const rankOf = (hit: SearchHit) => (hit.audit.__typename === 'ToolAudit' || hit.audit.error != null ? 0 : 1);

/** The most matches marked in one text: a common word in a 300 kB output stays quick to draw. */
const MAX_MARKS = 500;

/** `text` with each match of `term` (in any case, as the search matches) in a <mark>. */
function marked(text: string, term: string): ComponentChildren {
  if (!term) return revealed(text);
  const parts: ComponentChildren[] = [];
  let from = 0;
  for (const match of text.matchAll(new RegExp(term.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'gi'))) {
    if (parts.length === 2 * MAX_MARKS) break;
    parts.push(revealed(text.slice(from, match.index)), <mark>{revealed(match[0])}</mark>);
    from = match.index + match[0].length;
  }
  parts.push(revealed(text.slice(from)));
  return parts;
}

/** With no thread open: the threads, or the tool-call ledger across them. */
function Home() {
  const heading = useFocusedHeading();
  return (
    <>
      <h1 class="visually-hidden" ref={heading} tabIndex={-1}>{home.value === 'ledger' ? 'Tool calls across threads' : 'Threads'}</h1>
      <div class="views home-views" role="group" aria-label="View">
        <button aria-pressed={home.value === 'threads'} onClick={() => (home.value = 'threads')}>Threads</button>
        <button aria-pressed={home.value === 'ledger'} onClick={() => (home.value = 'ledger')}>Tool calls across threads</button>
      </div>
      {home.value === 'ledger' ? <Ledger acrossThreads /> : <ThreadList />}
    </>
  );
}

/** A thread's id as a reader pastes it from a log or an alert. */
const THREAD_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function ThreadList() {
  const shown = threads.value;
  const filter = threadFilter.value.trim();
  const beyondReadAt = threadsBeyondReadAt.value;
  // A pasted id goes to its thread (the list filters titles: an id is in none of them).
  const idGiven = THREAD_ID.test(filter) ? filter.toLowerCase() : null;
  return (
    <section class="threads">
      <h2>Threads</h2>
      <input
        type="text"
        class="thread-filter"
        aria-label="Filter threads by title, or go to a thread by its id"
        aria-describedby="threads-count"
        placeholder="Filter by title, or paste a thread id"
        value={threadFilter.value}
        onInput={(e) => filterThreads(e.currentTarget.value)}
      />
      {idGiven && (
        <p class="thread-by-id">
          <a href={linkTo(idGiven, null)} data-testid="thread-by-id" onClick={inPage(() => openThread(idGiven))}>Open thread {idGiven}</a>
        </p>
      )}
      {/* Shown, not live (the list refreshes every few seconds): what a read the reader asked for shows is said below. */}
      <p class="muted" id="threads-count" data-testid="threads-count">
        {threadsCount.value}
      </p>
      <p class="visually-hidden" role="status" data-testid="threads-news">{threadsNews.value}</p>
      {shown.length === 0 && (
        <p class="muted">{!threadsRead.value ? 'Loading threads…' : filter ? 'No thread you may read has that in its title.' : 'No threads you may read yet.'}</p>
      )}
      <ul>{shown.slice(0, MAX_THREADS_READ).map(ThreadListItem)}</ul>
      <p class="threads-stale" role="status" data-testid="threads-stale">
        {beyondReadAt != null && `The ${MAX_THREADS_READ} newest threads refresh every ${THREADS_REFRESH_MS / 1000} seconds; those below them are as read at ${dateTimeLabel(new Date(beyondReadAt).toISOString())}.`}
      </p>
      {beyondReadAt != null && <button onClick={() => loadThreads('all')}>Read them again</button>}
      {shown.length > MAX_THREADS_READ && <ul>{shown.slice(MAX_THREADS_READ).map(ThreadListItem)}</ul>}
      {threadsHaveMore.value && (
        <button onClick={() => void loadThreads('more').then(() => focusFirstNewIfLost('section.threads', 'data-thread-id', new Set(shown.map((thread) => thread.id))))}>More threads</button>
      )}
    </section>
  );
}

/** One thread of the list: its title as a link, its latest run's status, its runs and failures. */
function ThreadListItem(thread: ThreadItem) {
  const failures = failuresText(thread.auditSummary);
  return (
    <li key={thread.id} data-thread-id={thread.id}>
      <a href={linkTo(thread.id, null)} data-thread-id={thread.id} onClick={inPage(() => openThread(thread.id))}>
        <bdi>{revealed(thread.title || thread.id)}</bdi>
      </a>
      {thread.latestRun && <span class={`status ${thread.latestRun.status}`} title="the latest run's status">{thread.latestRun.status}</span>}
      <span class="thread-stats" data-testid="thread-stats">
        {' '}{thread.runCount} run{thread.runCount === 1 ? '' : 's'}
        {thread.failedRunCount > 0 && <span class="failures"> · {thread.failedRunCount} failed</span>}
        {failures && <span class="failures"> · {failures}</span>}
      </span>
      <span class="muted"> · {thread.ownerId} · latest activity {dateTimeLabel(thread.lastActivityAt)}</span>
    </li>
  );
}

function RunMeta({ row }: { row: Row }) {
  const run = row.run!;
  const leaseLeft = run.leaseExpiresAt && run.status === 'RUNNING' ? Date.parse(run.leaseExpiresAt) - now.value : null;
  return (
    <span class="meta">
      {run.leaseOwner && <> lease {run.leaseOwner}</>} · epoch {run.leaseEpoch}
      {leaseLeft != null && <> · {leaseLeft > 0 ? `${formatDuration(leaseLeft)} left` : 'lease expired'}</>}
      {run.resumedFrom && (
        <>
          {' · resumes '}
          <a href={linkTo(threadId.value!, run.resumedFrom.id)} class="resumed-from" tabIndex={-1} onClick={inPage(() => (selectedKey.value = run.resumedFrom!.id))}>
            {runLabel(orderedRuns.value, run.resumedFrom.id)}
          </a>
        </>
      )}
    </span>
  );
}

/** Every row is this tall, so only the rows in sight are drawn (a thread of thousands scrolls as one of ten). */
const ROW_HEIGHT = 28;
/** A narrow window (a phone, or 400 % zoom): a row takes two lines, its status and duration below its name and bar, so they are read whole. */
const narrowQuery = matchMedia('(max-width: 760px)');
const narrow = signal(narrowQuery.matches);
narrowQuery.addEventListener('change', (event) => (narrow.value = event.matches));
const rowHeight = () => (narrow.value ? 2 * ROW_HEIGHT : ROW_HEIGHT);

/** The page is being printed (or saved as PDF): every row is drawn then, not only those in sight. */
const printing = signal(matchMedia('print').matches);
matchMedia('print').addEventListener('change', (event) => (printing.value = event.matches));
addEventListener('beforeprint', () => (printing.value = true));
addEventListener('afterprint', () => (printing.value = matchMedia('print').matches));

/** "412 → 57 tokens": input, then output. */
const formatTokens = (tokens: Tokens) => `${tokens.input.toLocaleString('en')} → ${tokens.output.toLocaleString('en')} tokens`;
const OVERSCAN = 8;

/** A row as a screen reader reads it: what, how it ended, its failures, how long, why (a reason that only repeats the status left out). */
const rowName = (row: Row) => {
  const status = row.status.toLowerCase().replace(/_/g, ' ');
  const why = row.awaitingVerdict ? 'error, awaiting run verdict' : row.reason?.toLowerCase() === status ? null : row.reason;
  return markedText([row.label, status, row.failures, formatDuration(row.durationMs), why].filter(Boolean).join(', '));
};

/** What `n` or `p` selected, said aloud: "Failed tool fetch (c1), run 3 · 1a2b3c". */
function selectionAnnouncement(): string {
  const key = announcedKey.value;
  const row = key && key === selectedKey.value ? rows.value.find((candidate) => candidate.key === key) : undefined;
  if (!row) return '';
  const status = row.status.charAt(0) + row.status.slice(1).toLowerCase().replace(/_/g, ' ');
  const what = row.kind === 'tool' ? `tool ${row.label}` : row.kind === 'model' ? `model call ${row.label}` : row.label;
  return markedText(`${status} ${what}${row.audit ? `, ${runLabel(orderedRuns.value, row.audit.runId)}` : ''}`);
}

/** A separator only a screen reader hears. */
const apart = () => <span class="visually-hidden apart">, </span>;

function TimelineRow({ row, top, index }: { row: Row; top: number; index: number }) {
  const selected = selectedKey.value === row.key;
  return (
    <div
      role="row"
      aria-selected={selected}
      aria-rowindex={index + 1}
      aria-label={rowName(row)}
      class={`row ${row.kind} ${selected ? 'selected' : ''}`}
      id={`row-${row.key}`}
      data-key={row.key}
      data-kind={row.kind}
      data-status={row.status}
      style={{ top: `${top}px`, height: `${rowHeight()}px` }}
      onClick={() => selectRow(row.key)}
      onDblClick={() => row.kind === 'run' && zoomTo(row)}
    >
      {/* The row's buttons and link are the mouse's: the keyboard reaches the rows as one Tab stop, and these actions in the details (RunActions). */}
      <div class="label" role="gridcell" style={{ paddingLeft: `${row.depth * 1.2}em` }}>
        <span class="name" title={row.label}>{revealed(row.label)}</span>
        {row.kind === 'run' && (
          <button class="zoom-run" tabIndex={-1} title="Zoom to this run (z)" aria-label={`Zoom to ${markedText(row.label)}`} onClick={(e) => (e.stopPropagation(), zoomTo(row))}>
            ⤢
          </button>
        )}
        {row.unloaded > 0 && !auditsHidden.value && (
          <button
            class="load-run"
            data-testid="load-run"
            tabIndex={-1}
            title={`${row.unloaded} entries of this run are not loaded`}
            disabled={loadingRuns.value.has(row.key)}
            onClick={(e) => (e.stopPropagation(), void loadRun(row.key))}
          >
            {loadingRuns.value.has(row.key) ? 'loading…' : `${row.unloaded} entries not loaded · load`}
          </button>
        )}
        {row.kind === 'run' && <RunMeta row={row} />}
        {row.ranInRun && <span class="meta"> · ran in resumed {runLabel(orderedRuns.value, row.ranInRun)}</span>}
      </div>
      <div class="track" role="gridcell">
        {row.inView && (
          <div class={`bar ${row.status} ${row.running ? 'running' : ''}`} style={{ left: `${row.left}%`, width: `${row.width}%` }} />
        )}
      </div>
      <div class="info" role="gridcell" title={[row.status, row.failures, formatDuration(row.durationMs), row.tokens && formatTokens(row.tokens), row.sizes, row.reason].filter(Boolean).join(' · ')}>
        {/* Each part after a hidden comma: the spans' text alone reads "FAILED34 mspermission denied". */}
        <span class={`status ${row.status}`}>{row.status}</span>
        {row.failures && <>{apart()}<span class="failures" data-testid="run-failures">{row.failures}</span></>}
        {apart()}<span class="duration">{formatDuration(row.durationMs)}</span>
        {row.awaitingVerdict && <>{apart()}<span class="awaiting" title="A bare tool error: the run's verdict decides its status">error · awaiting run verdict</span></>}
        {row.reason && !row.awaitingVerdict && <>{apart()}<span class="reason">{row.reason}</span></>}
        {row.tokens && <>{apart()}<span class="tokens" title="input → output tokens">{formatTokens(row.tokens)}</span></>}
        {row.sizes && <>{apart()}<span class="sizes" title="Payload sizes as JSON text: open the row to load them">{row.sizes}</span></>}
      </div>
    </div>
  );
}

/** Selects a clicked row; where the details stack below the rows (a narrow window), brings them into sight. */
function selectRow(key: string) {
  selectedKey.value = key;
  requestAnimationFrame(() => {
    const details = document.querySelector('.details');
    if (details && details.getBoundingClientRect().top > innerHeight * 0.75) details.scrollIntoView({ block: 'start' });
  });
}

const PREVIEW_CHARS = 2000;

/**
 * Copying to the clipboard from a button: `copied` for a moment after, or `refused` saying why
 * (the clipboard is there on https and localhost only, and a browser may still refuse it).
 */
function useCopy(what: string) {
  const copied = useSignal(false);
  const refused = useSignal<string | null>(null);
  /** For the button's status, which a screen reader reads out: the copy made, or why not. */
  const said = refused.value ?? (copied.value ? `Copied ${what}.` : '');
  const copy = (text: string) => {
    const refuse = () => (refused.value = 'Copy needs https or localhost; select the text instead.');
    if (!navigator.clipboard) return refuse();
    navigator.clipboard.writeText(text).then(() => {
      refused.value = null;
      copied.value = true;
      setTimeout(() => (copied.value = false), 1500);
    }, refuse);
  };
  return { copied, said, copy };
}

/** A payload as the API gave it, to paste elsewhere: a string as its text, any other value as its JSON. */
const copiedPayload = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value, null, 2));

/**
 * A payload (payloadText), collapsed above a size: a 1 MiB output costs nothing until it is opened.
 * Its heading is an h3 under the details' h2, an h4 within a part of them (declared vs effective).
 */
function JsonView({ value, label, bytes, level = 3 }: { value: unknown; label: string; bytes?: number | null; level?: 3 | 4 }) {
  const Heading = level === 3 ? 'h3' : 'h4';
  const open = useSignal(false);
  const { copied, said, copy } = useCopy(label);
  // Read once per payload, not on each tick of the page's clock.
  const text = useMemo(() => (value == null ? '' : payloadText(value)), [value]);
  if (value === undefined || value === null) return <div class="json-view"><Heading>{label}</Heading><span class="muted">none</span></div>;
  const large = text.length > PREVIEW_CHARS;
  return (
    <div class="json-view" data-label={label}>
      {/* The heading names the payload alone: its buttons, beside it, say what they act on. */}
      <div class="json-head">
        <Heading>{label} {bytes != null && <span class="muted" title="bytes of the stored JSON">({formatBytes(bytes)})</span>}</Heading>
        {large && (
          <button aria-expanded={open.value} aria-label={`${open.value ? 'Collapse' : 'Expand all'} ${label}`} onClick={() => (open.value = !open.value)}>
            {open.value ? 'Collapse' : 'Expand all'}
          </button>
        )}
        {/* The value itself: the box shows line breaks inside strings as lines and invisible characters as marks. */}
        <button onClick={() => copy(copiedPayload(value))} aria-label={`Copy ${label}`} data-testid="copy-payload">{copied.value ? 'Copied' : 'Copy'}</button>
        <span role="status" class="muted">{said}</span>
      </div>
      {/* Focusable: a line wider than its box scrolls sideways in it, by the keyboard too. */}
      <pre tabIndex={0}>{marked(large && !open.value ? `${text.slice(0, PREVIEW_CHARS)}\n… ${(text.length - PREVIEW_CHARS).toLocaleString('en')} more characters` : text, searchedText.value)}</pre>
    </div>
  );
}


/** One message; a long one stays collapsed until opened. */
function MessageView({ message }: { message: ConversationMessage }) {
  const open = useSignal(false);
  const long = message.text.length > PREVIEW_CHARS;
  return (
    <li class={`message ${message.role}`}>
      <strong>{message.role}</strong>{' '}
      <span class="message-text">{marked(long && !open.value ? `${message.text.slice(0, PREVIEW_CHARS)}…` : message.text, searchedText.value)}</span>
      {long && <button onClick={() => (open.value = !open.value)}>{open.value ? 'Collapse' : `Show all ${message.text.length.toLocaleString('en')} characters`}</button>}
      {message.toolCalls.map((call) => (
        <div class="message-tool-call" key={call.id}>
          → {revealed(`${call.name}(${JSON.stringify(call.args)})`)} <code>{revealed(call.id)}</code>
        </div>
      ))}
    </li>
  );
}

function Conversation({ messages }: { messages: ConversationMessage[] }) {
  return (
    <div class="conversation" data-testid="conversation">
      <h3>Conversation</h3>
      <ol>{messages.map((message, index) => <MessageView key={index} message={message} />)}</ol>
    </div>
  );
}

/** Whether two JSON values are equal, as jsondiffpatch finds no delta between them. */
const sameJson = (a: unknown, b: unknown): boolean => {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null || Array.isArray(a) !== Array.isArray(b)) return false;
  const [x, y] = [a as Record<string, unknown>, b as Record<string, unknown>];
  const keys = Object.keys(x);
  return keys.length === Object.keys(y).length && keys.every((key) => Object.hasOwn(y, key) && sameJson(x[key], y[key]));
};

/** jsondiffpatch (diff.js, from this server), loaded when a row's inputs first differ: most rows never need it. */
const diffLibrary = signal<typeof import('./diff.js') | null>(null);
let diffLibraryAsked = false;
function loadedDiffLibrary() {
  if (!diffLibraryAsked) {
    diffLibraryAsked = true;
    // Not loaded (the network gone): the next row that differs asks again; both sides still show.
    import('./diff.js').then((library) => (diffLibrary.value = library), () => (diffLibraryAsked = false));
  }
  return diffLibrary.value;
}

/**
 * Above this many characters of JSON on either side the differences are not drawn: jsondiffpatch
 * draws every item with nothing collapsed, and a 60,000-item array kept the page from answering
 * a click for more than 30 s. The Copy buttons take both sides to a diff tool instead.
 */
const DIFF_DRAWN_CHARS = 20_000;

/** The model's declared arguments against what the tool really received, differences marked. */
function DeclaredVsEffective({ declared, effective }: { declared: unknown; effective: unknown }) {
  const texts = useMemo(() => [JSON.stringify(declared ?? null), JSON.stringify(effective ?? null)], [declared, effective]);
  const drawn = texts.every((text) => text.length <= DIFF_DRAWN_CHARS);
  // Compared as shown: a difference in invisible characters shows as their marks.
  const shown = useMemo(() => (drawn ? [declared ?? null, effective ?? null].map(withInvisibleMarked) : null), [drawn, declared, effective]);
  // Both are read from the database's jsonb, whose key order is one: equal values are equal texts.
  const differs = shown ? !sameJson(shown[0], shown[1]) : texts[0] !== texts[1];
  const library = shown && differs ? loadedDiffLibrary() : null;
  const delta = useMemo(() => {
    if (!library || !shown) return undefined;
    const found = library.diff(shown[0], shown[1]);
    return found && (library.formatDiffHtml(found, shown[0]) ?? '');
  }, [library, shown]);
  return (
    <div class="declared-vs-effective">
      <h3>Declared by the model vs effective input {differs ? <span class="differs">differs</span> : <span class="same">identical</span>}</h3>
      <div class="side-by-side">
        <JsonView label="declared" value={declared} level={4} />
        <JsonView label="effective" value={effective} level={4} />
      </div>
      {delta !== undefined && <div class="diff" dangerouslySetInnerHTML={{ __html: delta }} />}
      {differs && !drawn && (
        <p class="muted" data-testid="diff-not-drawn">
          The differences are not drawn above {DIFF_DRAWN_CHARS.toLocaleString('en')} characters of JSON: copy both sides to compare them in a diff tool.
        </p>
      )}
    </div>
  );
}

/** The label of the model call that declared a never-started call's row: the row above it at depth 1. */
function declaringModelLabel(row: Row): string | null {
  const all = allRows.value;
  for (let index = all.indexOf(row) - 1; index >= 0; index--) if (all[index]!.kind === 'model') return all[index]!.label;
  return null;
}

const counted = (count: number, noun: string) => `${count} ${noun}${count === 1 ? '' : 's'}`;

/** The row's facts a debugger quotes: times, ids, sequence, lease epoch, duration, tokens. */
function Facts({ row, audit }: { row: Row; audit?: AuditDetail }) {
  const run = row.run ?? orderedRuns.value.find((candidate) => candidate.id === row.audit?.runId);
  const facts: [string, string | null | undefined][] = row.declared
    ? [
        ['tool call id', row.declared.toolCallId],
        ['ToolCall id', row.declared.id],
        ['declared by', declaringModelLabel(row)],
      ]
    : row.audit
    ? [
        ['started (runtime clock)', dateTimeLabel(row.audit.startedAt)],
        ['finished (runtime clock)', dateTimeLabel(row.audit.finishedAt)],
        ['duration', formatDuration(row.durationMs)],
        ['audit id', row.audit.id],
        ['tool call id', row.audit.toolCallId],
        ['operation id', row.audit.operationId],
        ['sequence', `${row.audit.sequence}${row.audit.finishedSequence ? ` → ${row.audit.finishedSequence}` : ''}`],
        ['run', run ? runLabel(orderedRuns.value, run.id) : row.audit.runId],
        ['lease epoch', run ? String(run.leaseEpoch) : null],
        ['tokens', row.tokens && formatTokens(row.tokens)],
        ['sizes', row.sizes],
      ]
    : [
        ['created', dateTimeLabel(row.run?.createdAt)],
        ['started (claimed)', dateTimeLabel(row.run?.startedAt)],
        ['finished', dateTimeLabel(row.run?.finishedAt)],
        ['duration', formatDuration(row.durationMs)],
        ['run id', row.run?.id],
        ['lease epoch', row.run ? String(row.run.leaseEpoch) : null],
        ['lease owner', row.run?.leaseOwner],
        ['entries', row.run?.auditSummary ? `${row.run.auditSummary.audits} (${counted(row.run.auditSummary.modelCalls, 'model call')}, ${counted(row.run.auditSummary.toolCalls, 'tool')})` : null],
        ['failures', row.failures],
        ['tokens', row.tokens && formatTokens(row.tokens)],
      ];
  const { copied, said, copy: copyText } = useCopy('the row as JSON');
  const copy = () => copyText(JSON.stringify(audit ?? row.audit ?? row.run ?? row.declared, null, 2));
  return (
    <>
      <dl class="facts" data-testid="facts">
        {facts.filter(([, value]) => value).map(([name, value]) => (
          <div key={name}><dt>{name}</dt><dd>{revealed(value!)}</dd></div>
        ))}
      </dl>
      <p class="details-actions">
        <button onClick={copy} data-testid="copy-json">{copied.value ? 'Copied' : 'Copy as JSON'}</button>{' '}
        <a href={threadId.value ? threadAddress(threadId.value, row.key) : '#'} data-testid="row-link">Link to this row</a>
        <span role="status" class="muted">{said && ` ${said}`}</span>
      </p>
    </>
  );
}

/**
 * A run's own actions, first in its details: loading its entries not loaded, and going to the run it
 * resumes. Each leaves the focus on the rows once its button is gone.
 */
function RunActions({ row }: { row: Row }) {
  const resumes = row.run?.resumedFrom?.id;
  const load = row.unloaded > 0 && !auditsHidden.value;
  if (!load && !resumes) return null;
  const loading = loadingRuns.value.has(row.key);
  return (
    <p class="details-actions">
      {load && (
        // aria-disabled, not disabled: a disabled button drops the focus while the entries load.
        <button aria-disabled={loading} onClick={() => !loading && void loadRun(row.key).then(focusRowsIfLost)}>
          {loading ? 'Loading…' : `Load the ${row.unloaded} entries not loaded`}
        </button>
      )}{' '}
      {resumes && (
        <button onClick={() => ((selectedKey.value = resumes), focusRows())}>
          Go to {runLabel(orderedRuns.value, resumes)}, which this run resumes
        </button>
      )}
    </p>
  );
}

function Details() {
  const row = rows.value.find((candidate) => candidate.key === selectedKey.value);
  if (!row) {
    return (
      <aside class="details muted" aria-label="Details of the selected row">
        Select a row to see its details. <span class="details-keys">Keys: ↑ ↓ move{auditsHidden.value ? '.' : ', n / p next / previous failure.'}</span>
      </aside>
    );
  }
  const loaded = row.audit && auditDetails.value.get(row.key);
  const audit = loaded && loaded.summary === row.audit ? loaded.detail : undefined;
  if (row.audit && !audit) {
    return (
      <aside class="details" data-key={row.key} aria-busy="true" aria-label={`Details of ${markedText(row.label)}`}>
        <h2>{revealed(row.label)} <span class={`status ${row.status}`}>{row.status}</span></h2>
        <p class="muted">Loading…</p>
      </aside>
    );
  }
  return (
    <aside class="details" data-key={row.key} aria-label={`Details of ${markedText(row.label)}`}>
      <h2>
        {marked(row.label, searchedText.value)} <span class={`status ${row.status}`}>{row.status}</span>
      </h2>
      {row.kind === 'run' && <RunActions row={row} />}
      <Facts row={row} audit={audit} />
      {row.declared && (
        <p class="muted" data-testid="declared-note">
          {row.status === 'PENDING'
            ? 'Declared by the model call above; not started yet (its run, or a resume of it, still goes).'
            : row.status === 'NEVER_RUN'
              ? 'Declared by the model call above and never started: its run ended without running it.'
              : <>
                  Declared by the model call above; it ran in {row.ranInRun ? runLabel(orderedRuns.value, row.ranInRun) : 'a resumed run'}, whose entries are not loaded.{' '}
                  {row.ranInRun && (
                    <button type="button" onClick={() => void loadRun(row.ranInRun!)}>
                      {loadingRuns.value.has(row.ranInRun) ? 'Loading…' : 'Load that run'}
                    </button>
                  )}
                </>}
        </p>
      )}
      {row.awaitingVerdict && <p class="awaiting">This tool reported an error; the run's terminal verdict will decide its final status.</p>}
      {row.run && <JsonView label="error" value={row.run.error} />}
      {audit?.__typename === 'ToolAudit' && (
        <>
          <DeclaredVsEffective declared={audit.toolCall?.declaredInput} effective={audit.effectiveInput} />
          <JsonView label="output" value={audit.output} bytes={audit.outputBytes} />
          <JsonView label="error" value={audit.error} bytes={audit.errorBytes} />
        </>
      )}
      {audit?.__typename === 'ModelAudit' && (
        <>
          {row.tokens && <p data-testid="model-tokens">Usage: {formatTokens(row.tokens)}</p>}
          {(() => {
            const messages = conversationOf(audit.input, audit.output);
            return messages && <Conversation messages={messages} />;
          })()}
          <JsonView label="usage" value={audit.usage} />
          <JsonView label="input" value={audit.input} bytes={audit.inputBytes} />
          <JsonView label="output" value={audit.output} bytes={audit.outputBytes} />
          <JsonView label="error" value={audit.error} bytes={audit.errorBytes} />
        </>
      )}
    </aside>
  );
}

/** Shows `row`'s span (a run), with a margin, on the whole axis. */
/** Zooms the axis to a row's span; a run whose entries are not all loaded loads them. */
function zoomTo(row: Row) {
  if (row.kind === 'run' && row.unloaded > 0) void loadRun(row.key);
  if (!Number.isFinite(row.start)) return;
  const end = Number.isFinite(row.end) ? row.end : now.value;
  const margin = Math.max(50, (end - row.start) * 0.02);
  zoom.value = { from: row.start - margin, to: end + margin };
}

/**
 * The ruler: clock times on round values, idle gaps marked; drag across it to zoom into a span,
 * with a mouse, a finger or a pen (one pointer, captured, so a drag that leaves the ruler still
 * ends where it is let go, clamped to the axis). A tap on an idle gap gives its length (and its
 * neighbours' within a fingertip) below the ruler, as its title does on a mouse's hover.
 */
function Ruler({ axis }: { axis: Axis }) {
  const drag = useSignal<{ pointerId: number; from: number; to: number } | null>(null);
  /** The gaps a tap was near, by their starts: shown while the axis still has them. */
  const tappedGaps = useSignal<number[]>([]);
  const tapped = axis.pieces.filter((piece) => piece.gap && tappedGaps.value.includes(piece.from));
  const percentAt = (event: PointerEvent) => {
    const box = (event.currentTarget as HTMLElement).getBoundingClientRect();
    return Math.min(100, Math.max(0, ((event.clientX - box.left) / box.width) * 100));
  };
  const track = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const element = track.current;
    if (!element) return;
    const measure = () => element.clientWidth > 0 && (rulerWidth.value = element.clientWidth);
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(element);
    return () => observer.disconnect();
  }, []);
  return (
    <div class="ruler-row" aria-label="time axis">
      <div class="label">
        <span class="ruler-zone" title="The ruler's clock times are in this zone">{utcOffsetLabel(new Date(Number.isFinite(axis.from) ? axis.from : Date.now()))}</span>
        {zoom.value ? (
          // It goes with the zoom: the rows take its focus.
          <button class="zoom-out" title="Zoom out to the whole thread (Shift+Z)" onClick={() => ((zoom.value = null), focusRowsIfLost())}>Whole thread</button>
        ) : (
          <span class="muted">drag on the ruler to zoom</span>
        )}
      </div>
      <div
        class="track ruler-track"
        ref={track}
        data-testid="ruler"
        onPointerDown={(e) => {
          // A mouse's or a pen's main button, or a first finger; a second finger leaves the drag be.
          if (!e.isPrimary || e.button !== 0 || drag.value) return;
          e.currentTarget.setPointerCapture(e.pointerId);
          drag.value = { pointerId: e.pointerId, from: percentAt(e), to: percentAt(e) };
        }}
        onPointerMove={(e) => drag.value?.pointerId === e.pointerId && (drag.value = { ...drag.value, to: percentAt(e) })}
        onPointerCancel={() => (drag.value = null)}
        onPointerUp={(e) => {
          const span = drag.value;
          if (span?.pointerId !== e.pointerId) return;
          drag.value = null;
          if (Math.abs(span.to - span.from) < 0.5) return void (tappedGaps.value = gapsNear(axis, span.to, e.currentTarget.clientWidth).map((gap) => gap.from));
          const [a, b] = [Math.min(span.from, span.to), Math.max(span.from, span.to)];
          zoom.value = { from: axis.timeAt(a), to: axis.timeAt(b) };
        }}
      >
        {axis.pieces.filter((piece) => piece.gap).map((piece) => (
          <div class={`gap ${tapped.includes(piece) ? 'tapped' : ''}`} key={piece.from} style={{ left: `${piece.left}%`, width: `${piece.width}%` }} title={`${formatDuration(piece.to - piece.from)} idle (compressed)`} />
        ))}
        {axis.idleLabels.map((idle) => (
          <span class="gap-label" key={idle.left} style={{ left: `${idle.left}%` }}>{idle.label}</span>
        ))}
        {axis.ticks.map((tick) => (
          <span class="tick" key={tick.at} style={{ left: `${tick.left}%` }}>{tick.label}</span>
        ))}
        {drag.value && (
          <div class="drag" style={{ left: `${Math.min(drag.value.from, drag.value.to)}%`, width: `${Math.abs(drag.value.to - drag.value.from)}%` }} />
        )}
      </div>
      <div class="info">{zoom.value && <span class="muted">zoomed</span>}</div>
      {tapped.length > 0 && (
        <button class="gap-length" data-testid="gap-length" title="Close" onClick={() => (tappedGaps.value = [])}>
          {tapped.map((gap) => formatDuration(gap.to - gap.from)).join(' · ')} idle
        </button>
      )}
    </div>
  );
}

/** The rows pane's height in pixels (measured): the rows in sight, and how far Page Up/Down move. */
const rowsHeight = signal(600);

/** The rows in sight of the scroller. */
function Rows() {
  const scroller = useRef<HTMLDivElement>(null);
  const scrollTop = useSignal(0);
  useEffect(() => {
    const element = scroller.current;
    if (!element) return;
    const measure = () => (rowsHeight.value = element.clientHeight);
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(element);
    return () => observer.disconnect();
  }, []);
  const all = rows.value;
  const selectedIndex = all.findIndex((row) => row.key === selectedKey.value);
  // Follows the tail: a thread opens at its newest activity, and rows that arrive while the reader
  // is at the bottom keep it there; a reader elsewhere gets a cue instead of a jump, and rows added
  // above the first row in sight (a page back, a run loaded) leave that row where it was.
  const seen = useRef<Row[]>([]);
  const newBelow = useSignal(0);
  useEffect(() => {
    const element = scroller.current;
    const before = seen.current;
    seen.current = all;
    const added = all.length - before.length;
    if (!element || added <= 0) return;
    const wasAtBottom = element.scrollTop + element.clientHeight >= element.scrollHeight - (added + 2) * rowHeight();
    if (wasAtBottom && selectedIndex < 0) return void (element.scrollTop = element.scrollHeight);
    const topIndex = Math.floor(element.scrollTop / rowHeight());
    const topKey = before[topIndex]?.key;
    const topNow = all.findIndex((row) => row.key === topKey);
    if (topNow > topIndex) element.scrollTop += (topNow - topIndex) * rowHeight();
    // Only rows after the previous last one are new below.
    const previousLast = before[before.length - 1]?.key;
    const previousAt = previousLast === undefined ? -1 : all.findIndex((row) => row.key === previousLast);
    const addedBelow = previousAt < 0 ? added : all.length - 1 - previousAt;
    if (!wasAtBottom && addedBelow > 0) newBelow.value += addedBelow;
  }, [all.length]);
  // Keeps the selected row in sight when the selection moves or the filter changes (not when rows
  // added above shift it: the reader stays where they were).
  useEffect(() => {
    const element = scroller.current;
    if (!element || selectedIndex < 0) return;
    const top = selectedIndex * rowHeight();
    const rulerHeight = ROW_HEIGHT;
    if (top < element.scrollTop) element.scrollTop = top;
    else if (top + rowHeight() > element.scrollTop + element.clientHeight - rulerHeight) element.scrollTop = top + rowHeight() + rulerHeight - element.clientHeight;
  }, [selectedKey.value, errorsOnly.value]);
  const grid = useRef<HTMLDivElement>(null);
  const toBottom = () => {
    newBelow.value = 0;
    if (scroller.current) scroller.current.scrollTop = scroller.current.scrollHeight;
    // The cue goes: its focus goes to the rows, not to the page's top.
    grid.current?.focus({ preventScroll: true });
  };
  const first = printing.value ? 0 : Math.max(0, Math.floor(scrollTop.value / rowHeight()) - OVERSCAN);
  const last = printing.value ? all.length : Math.min(all.length, Math.ceil((scrollTop.value + rowsHeight.value) / rowHeight()) + OVERSCAN);
  // The live window lets entries go only while the reader is at the newest rows, and none that a row drawn here shows (store.ts, keepNewestAudits).
  const atNewest = scrollTop.value + rowsHeight.value >= (all.length - 1) * rowHeight();
  useEffect(() => void (rowsInSight.value = { keys: all.slice(first, last).map((row) => row.key), atNewest }), [all, first, last, atNewest]);
  useEffect(() => () => void (rowsInSight.value = { keys: [], atNewest: true }), []);
  // Focus stays on the grid; it points at the selected row while that row is drawn.
  const active = selectedIndex >= first && selectedIndex < last ? `row-${all[selectedIndex]!.key}` : undefined;
  return (
    <div
      class="rows"
      ref={scroller}
      data-testid="rows"
      onScroll={(e) => {
        const element = e.currentTarget;
        scrollTop.value = element.scrollTop;
        if (element.scrollTop + element.clientHeight >= element.scrollHeight - rowHeight()) newBelow.value = 0;
      }}
    >
      <Ruler axis={timeline.value.axis} />
      <div
        class="row-space"
        ref={grid}
        role="grid"
        tabIndex={0}
        aria-label={`Timeline rows: arrow keys move the selection${auditsHidden.value ? '' : ', n and p go to the next and previous failure'}, z zooms to the selected row's run, Shift+Z zooms back out to the whole thread`}
        aria-rowcount={all.length}
        aria-activedescendant={active}
        style={{ height: `${all.length * rowHeight()}px` }}
      >
        {all.slice(first, last).map((row, offset) => (
          <TimelineRow key={row.key} row={row} index={first + offset} top={(first + offset) * rowHeight()} />
        ))}
      </div>
      <span class="visually-hidden" role="status" data-testid="selection-announcement">{selectionAnnouncement()}</span>
      {/* Keyed by the telling: the same news again ("1 new row.") is said again. */}
      <span class="visually-hidden" role="status" aria-atomic="true" data-testid="live-news">{liveNews.value && <span key={liveNews.value.told}>{liveNews.value.text}</span>}</span>
      {newBelow.value > 0 && (
        <button class="new-activity" data-testid="new-activity" onClick={toBottom}>
          ↓ {newBelow.value} new {newBelow.value === 1 ? 'row' : 'rows'} below
        </button>
      )}
      {all.length === 0 && (
        <p class="muted" data-testid="rows-empty">{!snapshotLoaded.value ? (threadReadError.value ? `The thread could not be read: ${threadReadError.value}` : 'Loading the runs…') : errorsOnly.value ? 'Nothing failed in this thread.' : 'No runs in this thread yet.'}</p>
      )}
    </div>
  );
}

/** The thread's token usage: the sum over its runs (each run's from the server until its entries are loaded). */
function ThreadTokens() {
  const total = addTokens(allRows.value.filter((row) => row.kind === 'run').map((row) => row.tokens));
  return total ? <span data-testid="thread-tokens"> · {formatTokens(total)} in this thread</span> : null;
}

/** The errors-only filter, the count of what failed, and the keys that go from one failure to the next. */
function FailureBar() {
  const failing = allRows.value.filter((row) => row.failed).length;
  const summary = threadInfo.value?.auditSummary;
  const text = summary && failuresText(summary);
  return (
    <div class="failure-bar">
      <button aria-pressed={errorsOnly.value} data-testid="errors-only" onClick={() => (errorsOnly.value = !errorsOnly.value)}>
        Errors only
      </button>
      <span class={failing ? 'failures' : 'muted'} data-testid="thread-failures">
        {text ? `In this thread: ${text}` : snapshotLoaded.value ? 'Nothing failed in this thread' : ''}
      </span>
      {/* Keyed by the press: a status whose text stays the same says nothing to a screen reader. */}
      <span role="status" class="failure-edge" data-testid="failure-edge">{failureEdge.value && <span key={failureEdge.value.presses}>{failureEdge.value.text}</span>}</span>
      {/* On a touch screen, with no keys to press: the same steps as n and p (the keys' help is not shown there). */}
      {!auditsHidden.value && (
        <span class="failure-steps">
          <button onClick={() => moveToFailure(-1)}>↑ Previous failure</button> <button onClick={() => moveToFailure(1)}>Next failure ↓</button>
        </span>
      )}
      <span class="muted keys-help">
        Keys: {!auditsHidden.value && <><kbd>n</kbd> / <kbd>p</kbd> next / previous failure · </>}<kbd>↑</kbd> <kbd>↓</kbd> <kbd>Home</kbd> <kbd>End</kbd> move · <kbd>z</kbd> zoom to the run · <kbd>Z</kbd> zoom out
      </span>
    </div>
  );
}

/** How far a key moves the selection (Page Up/Down: a pane's height of rows). */
function rowKeyDelta(key: string): number | 'first' | 'last' | undefined {
  const page = Math.max(1, Math.floor(rowsHeight.value / rowHeight()) - 1);
  return ({ ArrowDown: 1, ArrowUp: -1, PageDown: page, PageUp: -page, Home: 'first', End: 'last', j: 1, k: -1 } as const)[key];
}

/** Zooms to the selected row's run (the row itself, or the run its audit was recorded in). */
function zoomToSelectedRun() {
  const selected = allRows.value.find((row) => row.key === selectedKey.value);
  const runId = selected?.kind === 'run' ? selected.key : selected?.audit?.runId;
  const run = runId && allRows.value.find((row) => row.kind === 'run' && row.key === runId);
  if (run) zoomTo(run);
}

// The timeline's keys anywhere on an open thread's timeline (not while typing): n and p the next
// and previous failure; arrows, Page Up/Down, Home and End move the selection; z zooms to the
// selected row's run (its ⤢ button is no Tab stop, so five runs are not five more stops), Shift+Z
// back out to the whole thread.
addEventListener('keydown', (event) => {
  if (!threadId.value || view.value !== 'timeline' || event.ctrlKey || event.metaKey || event.altKey) return;
  const target = event.target as HTMLElement | null;
  // Escape in the details takes the reader back to the rows, on the row they opened.
  if (event.key === 'Escape' && target?.closest('.details')) return void focusRows();
  if (target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) return;
  // On a payload's box (a focusable <pre>) the moving keys scroll it, as on any scrolling box.
  const delta = target?.tagName === 'PRE' ? undefined : rowKeyDelta(event.key);
  // Failures are found in the audits, which this reader may not read (the page says so).
  const failureKey = (event.key === 'n' || event.key === 'p') && !auditsHidden.value;
  const zoomKey = event.key === 'z' || event.key === 'Z';
  if (!failureKey && !zoomKey && delta === undefined) return;
  event.preventDefault();
  if (event.key === 'Z') zoom.value = null;
  else if (zoomKey) zoomToSelectedRun();
  else if (delta !== undefined) moveSelection(delta);
  else moveToFailure(event.key === 'n' ? 1 : -1);
});

/**
 * Every declared tool call, run or not, newest first, with the cases a debugger hunts for: the
 * open thread's, or across the caller's threads (`acrossThreads`, each entry with its thread).
 */
function Ledger({ acrossThreads }: { acrossThreads: boolean }) {
  const page = ledgerPage.value;
  const filter = ledgerFilter.value;
  const names = filter.name && !ledgerNames.value.includes(filter.name) ? [...ledgerNames.value, filter.name] : ledgerNames.value;
  const set = (key: 'name' | 'status' | 'case') => (e: { currentTarget: HTMLSelectElement }) =>
    (ledgerFilter.value = { ...ledgerFilter.value, [key]: e.currentTarget.value });
  const runName = (runId: string) => (acrossThreads ? `run ${runId.replace(/-/g, '').slice(-6)}` : runLabel(orderedRuns.value, runId));
  const box = useRef<HTMLElement>(null);
  const focused = useRef<{ element: Element; index: number } | null>(null);
  // An entry that leaves the ledger (a refresh under a filter: its running call ended) took the
  // focus on its link to the page's body: the entry now in its place takes it, else the filters.
  useLayoutEffect(() => {
    const was = focused.current;
    if (!was || was.element.isConnected || (document.activeElement && document.activeElement !== document.body)) return;
    const links = box.current!.querySelectorAll<HTMLElement>('tbody a');
    (links[Math.min(was.index, links.length - 1)] ?? box.current!.querySelector<HTMLElement>('select[aria-label="Tool-call status"]'))?.focus();
  });
  return (
    <section
      class="ledger"
      aria-label={acrossThreads ? 'Tool-call ledger across threads' : 'Tool-call ledger'}
      data-testid="ledger"
      ref={box}
      onFocusIn={(event) => {
        const element = event.target as Element;
        const entry = element.closest('tbody tr');
        // Not an entry ('More tool calls' gone with the last page): the last entry.
        focused.current = { element, index: entry ? [...entry.parentElement!.children].indexOf(entry) : Infinity };
      }}
      // Focus the reader moved off (a click elsewhere) is theirs: only an entry the ledger dropped is followed.
      onFocusOut={(event) => {
        const element = event.target as Element;
        queueMicrotask(() => void (element.isConnected && focused.current?.element === element && (focused.current = null)));
      }}
    >
      <div class="ledger-filters">
        <select aria-label="Tool name" value={filter.name} onChange={set('name')}>
          <option value="">every tool</option>
          {names.map((name) => <option key={name} value={name}>{name}</option>)}
        </select>
        <select aria-label="Tool-call status" value={filter.status} onChange={set('status')}>
          <option value="">every status</option>
          {LEDGER_STATUSES.map((status) => <option key={status} value={status}>{status.toLowerCase()}</option>)}
        </select>
        <select aria-label="Case" value={filter.case} onChange={set('case')}>
          <option value="">every case</option>
          {(Object.keys(LEDGER_CASE_LABELS) as ToolCallLedgerCase[]).map((name) => <option key={name} value={name}>{LEDGER_CASE_LABELS[name]}</option>)}
        </select>
        {page && !page.error && (
          <span class="muted" data-testid="ledger-count">{page.entries.length}{page.hasMore ? '+' : ''} tool calls, newest first</span>
        )}
      </div>
      {!page && <p class="muted">Loading the tool calls…</p>}
      {page?.error && <p class="banner error" role="alert">{page.error}</p>}
      {page && !page.error && (
        <div class="table-box">
          <table>
            <thead>
              <tr>{acrossThreads && <th>thread</th>}<th>run</th><th>tool</th><th>call id</th><th>status</th><th>duration</th><th>input</th><th>cases</th></tr>
            </thead>
            <tbody>
              {page.entries.map((entry) => {
                const leaseLeft = leaseLeftMs(entry, now.value);
                return (
                  <tr key={entry.id} data-tool-call-id={entry.toolCallId} data-status={entry.status} data-thread-id={entry.threadId}>
                    {acrossThreads && <td><bdi>{revealed(entry.threadTitle || entry.threadId)}</bdi></td>}
                    <td>{runName(entry.runId)}</td>
                    <td>
                      {/* In the thread, the timeline replaces the ledger and its link: the rows take the focus, on the entry's row (across threads, the thread's heading does). */}
                      <a href={linkTo(entry.threadId, rowToOpen(entry))} onClick={inPage(() => (openLedgerEntry(entry), acrossThreads || focusRowsIfLost()))}>{revealed(entry.name)}</a>
                    </td>
                    <td><code>{revealed(entry.toolCallId)}</code></td>
                    <td><span class={`status ${entry.status}`}>{entry.status}</span></td>
                    <td>{formatDuration(shownDurationMs(entry, now.value))}</td>
                    <td class="input" title={markedText(`declared ${JSON.stringify(entry.declaredInput)}${entry.inputDiffers !== null ? `; effective ${JSON.stringify(entry.effectiveInput)}` : ''}`)}>
                      {entry.inputDiffers === true && <span class="differs">≠ effective differs</span>}
                      {entry.inputDiffers === false && <span class="same">= as declared</span>}
                      {entry.inputDiffers == null && <span class="muted">not run</span>}
                    </td>
                    <td class="cases">
                      {entry.cases.map((name) => <span key={name} class={`case ${LEDGER_CASE_LABELS[name].replace(/ /g, '-')}`}>{LEDGER_CASE_LABELS[name]}</span>)}
                      {leaseLeft !== null && <span class="lease-left">{leaseLeft > 0 ? `lease ${formatDuration(leaseLeft)} left` : 'lease expired'}</span>}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      {page?.hasMore && <button onClick={() => void loadLedger(true)}>More tool calls</button>}
    </section>
  );
}

function Timeline() {
  const heading = useFocusedHeading(threadId.value);
  if (threadGone.value) {
    return (
      <section class="timeline gone">
        <p class="banner error" role="alert" data-testid="thread-gone">
          This thread does not exist or was deleted: there is nothing more to show or follow.{' '}
          <a href="./" class="back" onClick={inPage(closeThread)}>← threads</a>
        </p>
      </section>
    );
  }
  const info = threadInfo.value;
  return (
    <section class="timeline">
      <div class="thread-head">
        <a href="./" class="back" onClick={inPage(closeThread)}>← threads</a>{' '}
        <h1 class="view-title" ref={heading} tabIndex={-1}>{info ? <bdi>{revealed(info.title || 'untitled thread')}</bdi> : 'Loading the thread…'}</h1>{' '}
        <span class="muted">
          {info && <>owned by {info.ownerId} · </>}<code>{threadId.value}</code>
        </span>
      </div>
      {!auditsHidden.value && snapshotLoaded.value && (
        <p class="muted">
          <span data-testid="loaded-count">{audits.value.size} entries loaded{truncated.value ? '; older ones exist' : ''}</span>
          <ThreadTokens />
        </p>
      )}
      {truncated.value && olderBefore.value && (
        <p class="banner older">
          Older entries exist.{' '}
          {/* aria-disabled, not disabled, while it loads: a disabled button drops the focus; once the last page is in, the rows take it. */}
          <button onClick={() => !loadingOlder.value && void loadOlder().then(focusRowsIfLost)} aria-disabled={loadingOlder.value} data-testid="load-older">
            {loadingOlder.value ? 'Loading…' : 'Load older entries'}
          </button>
        </p>
      )}
      {auditsHidden.value && <p class="banner hidden-audits" data-testid="audits-hidden">{auditsHidden.value}</p>}
      {rowNotFound.value && (
        <p class="banner error" role="alert" data-testid="row-not-found">
          This thread shows no row the link names (<code>{revealed(rowNotFound.value)}</code>):{' '}
          {auditsHidden.value ? "a model call or a tool execution shows to the thread's owner only, if they are a superadmin." : 'it may be gone, or the link was changed where it was shared.'}
        </p>
      )}
      {!auditsHidden.value && (
        <div class="views" role="group" aria-label="View">
          <button aria-pressed={view.value === 'timeline'} onClick={() => (view.value = 'timeline')}>Timeline</button>
          <button aria-pressed={view.value === 'ledger'} onClick={() => (view.value = 'ledger')}>Tool calls</button>
        </div>
      )}
      {view.value === 'ledger' && !auditsHidden.value ? (
        <Ledger acrossThreads={false} />
      ) : (
        <>
          <FailureBar />
          <div class="split">
            <Rows />
            <Details />
          </div>
        </>
      )}
    </section>
  );
}

function App() {
  if (!token.value) return <SignIn />;
  return (
    <>
      <Header />
      <SearchBox />
      <main>
        {pageError.value && <p class="banner error" role="alert">{pageError.value}</p>}
        {linkNotUnderstood.value && (
          <p class="banner error" role="alert" data-testid="link-not-understood">
            This link is not the address of a thread or a row: <code>{revealed(linkNotUnderstood.value)}</code>. A thread's is{' '}
            <code>#thread=</code> and its id of 36 characters; the link may have been cut short, or had text added, where it was shared.
          </p>
        )}
        <SearchResults />
        {isActivityHash(hash.value) ? <Activity token={token.value} /> : threadId.value ? <Timeline /> : <Home />}
      </main>
    </>
  );
}

// The tab's title names the view, so a reader knows where they are among their tabs and history.
effect(() => {
  const where = !token.value
    ? 'Sign in'
    : isActivityHash(hash.value)
      ? activityTitle(hash.value)
      : threadId.value
        ? threadGone.value ? 'Thread not found' : threadInfo.value ? markedText(threadInfo.value.title || 'untitled thread') : 'Loading the thread…'
        : linkNotUnderstood.value ? 'Link not understood' : home.value === 'ledger' ? 'Tool calls across threads' : 'Threads';
  document.title = `${where} · Agent audit timeline`;
});

restore();
render(<App />, document.getElementById('app')!);
