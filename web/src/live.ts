// The page's live layer, in one place. Who may read the thread's audits gets the resumable stream:
// read `threadAudits` (its `cursor`), then follow `threadChanges` after that cursor, applying each
// change by id; a reconnect resumes after the last cursor applied, so nothing is missed or
// re-read. Who may not (threadAudits is FORBIDDEN/NOT_FOUND, and so is threadChanges) follows
// `runChanged` and re-reads the runs whenever the connection (re)opens.
import type { Client } from 'graphql-ws';
import { gql, GraphQLRequestError, isTransient, messageOf, readFewer, readOver, retryAfterMs, STREAM_ENDED, subscribe } from './api.js';
import type { PageThreadInfoFragment, ThreadAuditsQuery, ThreadRunsQuery } from './generated/graphql/graphql.js';
import { RUN, RUN_CHANGED, RUNS_PAGE, THREAD_AUDITS, THREAD_CHANGES, THREAD_INFO, THREAD_RUNS } from './queries.js';
import type { AuditView, RunView } from './timeline.js';

export interface ThreadSink {
  thread(thread: ThreadInfo): void;
  runs(runs: RunView[]): void;
  run(run: RunView): void;
  audits(items: AuditView[], truncated: boolean): void;
  audit(audit: AuditView): void;
  /** Why this principal may not see the thread's audits (its runs are still shown). */
  auditsHidden(reason: string): void;
  failed(message: string): void;
  /** The thread is gone (deleted, or never was): the streams have stopped. */
  gone(): void;
}

/** A stream's or a read's errors that say the thread is gone: deleted while followed, or not found. */
const isGone = (errors: unknown) =>
  (Array.isArray(errors) ? errors : [errors]).some((error) => {
    const extensions = (error as { extensions?: { code?: string; reason?: string } } | null)?.extensions;
    return extensions?.reason === 'THREAD_DELETED' || extensions?.code === 'NOT_FOUND' || (error instanceof GraphQLRequestError && error.code === 'NOT_FOUND');
  });

const hasCode = (errors: unknown, code: string) =>
  (Array.isArray(errors) ? errors : [errors]).some((error) => (error as { extensions?: { code?: string } } | null)?.extensions?.code === code);

/** A stream's errors that say its `after` was refused: the only input the page's threadChanges sends that the server may refuse. */
const isRefusedCursor = (errors: unknown) => hasCode(errors, 'BAD_USER_INPUT');

type AuditPage = ThreadAuditsQuery['threadAudits'];
/** The open thread's title, owner and totals (its runs come apart). */
export type ThreadInfo = PageThreadInfoFragment;

/** The most audits one page asks for (threadAudits' default); fewer when their errors and usage are over the answer budget. */
export const AUDITS_PAGE = 500;

/**
 * One page of a thread's audits: the newest, or (with `before`, an audit id) those older than it;
 * with `runId`, of that run only. `truncated` says older ones exist, also when fewer were read.
 */
export async function readAuditPage(token: string, threadId: string, before: string | null, runId: string | null = null): Promise<AuditPage> {
  const { threadAudits } = await readFewer(AUDITS_PAGE, (limit) => gql(token, THREAD_AUDITS, { threadId, before, runId, limit }));
  return threadAudits;
}

/** One run as it is now (its summary), over the live connection, else over HTTP; null if it is gone. */
export async function readRun(client: Client, token: string, id: string): Promise<RunView | null> {
  const { run } = await readOver(client, token, RUN, { id });
  return run ?? null;
}

/** How long after a change the thread's totals, or a run's summary, are read again (the changes of that while share the read). */
const REREAD_MS = 500;

/**
 * Reads done again a moment after the changes that ask for them (`soon`): one read of each key
 * for a burst of changes. A read that fails is said (`failed`) and, when a later one may succeed
 * (the network, a proxy's error page), tried again, a little later each time it fails (up to 15 s;
 * each key at its own pace, so a key that keeps failing holds no other key back): left
 * for the next change, what it shows would stay stale while nothing changes. When the live
 * connection (re)opens, the server is back: the reads waiting to be tried again are tried at once.
 * Those of `everyConnect` are read whenever it (re)opens, a moment after: graphql-ws starts its
 * subscriptions again after 'connected', and a read before they start would miss what changes
 * in between.
 */
export function readsSoon<K>(client: Client, read: (key: K) => Promise<void>, failed: (error: unknown) => void, everyConnect: K[] = []) {
  /** The keys waiting to be read, each with its timer; and how often each failed in a row (its own back-off). */
  const waiting = new Map<K, ReturnType<typeof setTimeout>>();
  const failures = new Map<K, number>();
  let stopped = false;
  const readNow = (key: K) => {
    clearTimeout(waiting.get(key));
    waiting.delete(key);
    read(key).then(
      () => void failures.delete(key),
      (error: unknown) => {
        if (stopped) return;
        failed(error);
        if (stopped || !isTransient(messageOf(error))) return;
        const before = failures.get(key) ?? 0;
        failures.set(key, before + 1);
        later(key, retryAfterMs(before));
      },
    );
  };
  const later = (key: K, ms: number) => {
    if (!stopped && !waiting.has(key)) waiting.set(key, setTimeout(() => readNow(key), ms));
  };
  const soon = (keys: Iterable<K>) => {
    for (const key of keys) later(key, REREAD_MS);
  };
  const unlisten = client.on('connected', () => {
    if (stopped) return;
    for (const key of [...waiting.keys()]) if (failures.has(key)) readNow(key);
    soon(everyConnect);
  });
  return {
    soon,
    stop() {
      stopped = true;
      waiting.forEach((timer) => clearTimeout(timer));
      unlisten();
    },
  };
}

export function followThread(client: Client, token: string, threadId: string, sink: ThreadSink): () => void {
  let stopped = false;
  const unsubscribers: (() => void)[] = [];
  const stop = () => {
    stopped = true;
    threadReads.stop();
    unsubscribers.forEach((unsubscribe) => unsubscribe());
  };
  const fail = (error: unknown) => {
    if (stopped) return;
    if (!isGone(error)) return sink.failed(messageOf(error));
    stop();
    sink.gone();
  };

  /** All the thread's runs, a page at a time: a thread may hold more than one read returns. */
  const readRuns = async () => {
    const runs: RunView[] = [];
    let after: string | null = null;
    let size = RUNS_PAGE;
    do {
      const { thread }: ThreadRunsQuery = await readFewer(size, (first) => ((size = first), gql(token, THREAD_RUNS, { id: threadId, first, after })));
      if (stopped) return;
      if (!thread) throw new GraphQLRequestError(`Thread ${threadId} not found.`, 'NOT_FOUND');
      if (after === null) sink.thread(thread);
      runs.push(...thread.runs);
      after = thread.runs.length === size ? thread.runs[size - 1]!.id : null;
    } while (after);
    sink.runs(runs);
  };
  // The thread's totals (its failure line) follow its changes: one read per burst of them, over
  // the connection the changes came by.
  const threadReads = readsSoon(client, async () => {
    const { thread } = await readOver(client, token, THREAD_INFO, { id: threadId });
    if (thread && !stopped) sink.thread(thread);
  }, fail);
  const readThreadSoon = () => threadReads.soon([threadId]);
  const readAudits = async () => {
    try {
      return await readAuditPage(token, threadId, null);
    } catch (error) {
      if (error instanceof GraphQLRequestError && (error.code === 'FORBIDDEN' || error.code === 'NOT_FOUND')) return null;
      throw error;
    }
  };

  // A cursor the server refused (BAD_USER_INPUT: a restore gave the database a new id, or an older
  // instance during a rolling upgrade does not read a newer one's): the thread is read again and
  // followed from the cursor of that read, a little later each time it is refused again.
  let refusals = 0;
  const followAgain = () => {
    if (stopped) return;
    const wait = retryAfterMs(refusals++, 500);
    setTimeout(() => void start(), wait);
  };

  // A stream the server ended (it is stopping, a budget) is followed again (`follow`), a little
  // later each time it ends again without a change.
  let ends = 0;
  const followAgainLater = (follow: () => void) => {
    if (stopped) return;
    sink.failed(STREAM_ENDED);
    setTimeout(() => !stopped && follow(), retryAfterMs(ends++, 500));
  };

  const followChanges = (after: string) => {
    // graphql-ws re-sends this same payload on every reconnect, so keeping `after` at the last
    // applied cursor makes each reconnect resume exactly there.
    const variables = { threadId, after };
    // Refused or failed for good (said on the banner): nothing to resume when the stream completes.
    let settled = false;
    const refusedOr = (errors: unknown) => {
      settled = true;
      if (isRefusedCursor(errors)) followAgain();
      else fail(errors);
    };
    unsubscribers.push(
      subscribe(client, THREAD_CHANGES, variables, {
        next: ({ data, errors }) => {
          if (errors?.length) return hasCode(errors, 'SUBSCRIPTION_INTERRUPTED') || refusedOr(errors);
          if (!data || stopped) return;
          refusals = ends = 0;
          const { cursor, run, audit } = data.threadChanges;
          if (run) sink.run(run);
          if (audit) sink.audit(audit);
          variables.after = cursor;
          readThreadSoon();
        },
        error: refusedOr,
        complete: () => settled || followAgainLater(() => followChanges(variables.after)),
      }),
    );
  };

  const followRuns = () => {
    sink.auditsHidden('Audits (model calls and tool executions) are shown to superadmins on their own threads only.');
    // Run changes committed while the connection was down are only in the database.
    const runsReads = readsSoon(client, readRuns, fail, [threadId]);
    unsubscribers.push(runsReads.stop);
    const followRunChanges = () => {
      // Refused (said on the banner, or the thread is gone): nothing to follow again when the stream completes.
      let settled = false;
      unsubscribers.push(
        subscribe(client, RUN_CHANGED, { threadId }, {
          next: ({ data, errors }) => {
            if (errors?.length && !hasCode(errors, 'SUBSCRIPTION_INTERRUPTED')) {
              settled = true;
              return fail(errors);
            }
            if (!data || stopped) return;
            ends = 0;
            sink.run(data.runChanged);
            readThreadSoon();
          },
          error: (error) => {
            settled = true;
            if (isGone(error)) fail(error);
          },
          complete: () => settled || followAgainLater(followRunChanges),
        }),
      );
      // What changed since the runs were read, before the subscription started: the runs are read
      // again once it has had a moment to start (on a connection already open no 'connected' comes).
      runsReads.soon([threadId]);
    };
    followRunChanges();
  };

  const start = async () => {
    // A read lost on the way (the network, a proxy's error page) is tried again, a little later each time.
    for (let attempt = 0; !stopped; attempt++) {
      try {
        // The audits' cursor is read before the runs: a run change after it is replayed by the
        // stream in its latest state, never older than the runs read here.
        const audits = await readAudits();
        await readRuns();
        if (stopped) return;
        if (!audits) return followRuns();
        sink.audits(audits.items, audits.truncated);
        return followChanges(audits.cursor);
      } catch (error) {
        fail(error);
        if (!isTransient(messageOf(error))) return;
        await new Promise((resolve) => setTimeout(resolve, retryAfterMs(attempt)));
      }
    }
  };
  void start();

  return stop;
}
