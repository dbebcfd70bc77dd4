import { computed, effect, signal } from '@preact/signals';
import type { Client } from 'graphql-ws';
import { claimsOf, createLiveClient, gql, storedToken, storeToken } from './api.js';
import { followThread } from './live.js';
import { THREADS } from './queries.js';
import { layoutTimeline, mergeAudit, mergeRun, type AuditView, type RunView } from './timeline.js';

export const token = signal(storedToken());
export const claims = computed(() => (token.value ? claimsOf(token.value) : null));
export const connection = signal<'connecting' | 'live' | 'reconnecting'>('connecting');

export interface ThreadItem {
  id: string;
  title: string | null;
  ownerId: string;
  createdAt: string;
  latestRun: { id: string; status: string } | null;
}
export const threads = signal<ThreadItem[]>([]);
export const threadsCursor = signal<string | null>(null);
export const threadsHaveMore = signal(false);
export const pageError = signal<string | null>(null);

export const threadId = signal<string | null>(null);
export const threadInfo = signal<{ title: string | null; ownerId: string } | null>(null);
export const runs = signal<Map<string, RunView>>(new Map());
export const audits = signal<Map<string, AuditView>>(new Map());
export const truncated = signal(false);
export const auditsHidden = signal<string | null>(null);
export const selectedKey = signal<string | null>(null);

/** The page's one clock: it ticks only while something on the timeline runs. */
export const now = signal(Date.now());

export const rows = computed(() => {
  const ordered = [...runs.value.values()].sort((a, b) => Date.parse(a.createdAt) - Date.parse(b.createdAt));
  return layoutTimeline(ordered, audits.value.values(), now.value);
});
const anythingRunning = computed(() => rows.value.some((row) => row.running));
effect(() => {
  if (!anythingRunning.value) return;
  now.value = Date.now();
  const timer = setInterval(() => (now.value = Date.now()), 200);
  return () => clearInterval(timer);
});

let client: Client | null = null;
let stopFollowing: (() => void) | null = null;

/** Takes a token as `npm start` prints it (`Bearer …`) or bare. */
export function signIn(value: string) {
  const pasted = value.trim().replace(/^Bearer\s+/i, '');
  storeToken(pasted);
  token.value = pasted;
  pageError.value = null;
  void loadThreads(true);
  followLocation();
}

export function signOut() {
  closeThread();
  void client?.dispose();
  client = null;
  storeToken(null);
  token.value = null;
  threads.value = [];
}

function liveClient(): Client {
  client ??= createLiveClient(token.value!, (state) => (connection.value = state));
  return client;
}

export async function loadThreads(fromStart: boolean) {
  try {
    const { threads: page } = await gql<{
      threads: { edges: { node: ThreadItem }[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } };
    }>(token.value!, THREADS, { first: 20, after: fromStart ? null : threadsCursor.value });
    const nodes = page.edges.map((edge) => edge.node);
    threads.value = fromStart ? nodes : [...threads.value, ...nodes];
    threadsCursor.value = page.pageInfo.endCursor;
    threadsHaveMore.value = page.pageInfo.hasNextPage;
    pageError.value = null;
  } catch (error) {
    pageError.value = error instanceof Error ? error.message : String(error);
  }
}

export function openThread(id: string) {
  closeThread();
  threadId.value = id;
  if (location.hash !== `#thread=${id}`) history.pushState(null, '', `#thread=${id}`);
  stopFollowing = followThread(liveClient(), token.value!, id, {
    thread: (info) => (threadInfo.value = info),
    runs: (list) => {
      runs.value = list.reduce(mergeRun, runs.value);
      pageError.value = null;
    },
    run: (run) => (runs.value = mergeRun(runs.value, run)),
    audits: (items, isTruncated) => {
      audits.value = items.reduce(mergeAudit, audits.value);
      truncated.value = isTruncated;
    },
    audit: (audit) => (audits.value = mergeAudit(audits.value, audit)),
    auditsHidden: (reason) => (auditsHidden.value = reason),
    failed: (message) => (pageError.value = message),
  });
}

export function closeThread() {
  stopFollowing?.();
  stopFollowing = null;
  threadId.value = null;
  threadInfo.value = null;
  runs.value = new Map();
  audits.value = new Map();
  truncated.value = false;
  auditsHidden.value = null;
  selectedKey.value = null;
  if (location.hash) history.pushState(null, '', location.pathname);
}

/** Opens the thread named in the URL (a thread id is not a secret; the token never goes there). */
function followLocation() {
  const wanted = /^#thread=([0-9a-f-]{36})$/i.exec(location.hash)?.[1] ?? null;
  if (wanted === threadId.value) return;
  if (wanted) openThread(wanted);
  else closeThread();
}

export function restore() {
  addEventListener('hashchange', () => token.value && followLocation());
  if (!token.value) return;
  void loadThreads(true);
  followLocation();
}
