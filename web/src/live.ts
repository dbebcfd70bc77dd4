// The page's live layer, in one place: a snapshot read, then live changes applied by id.
// Until the resumable `threadChanges` stream exists, it follows `auditChanged` and `runChanged`
// and re-reads the snapshot every time the connection (re)opens, so nothing committed while it
// was down is missed.
import type { Client } from 'graphql-ws';
import { gql, GraphQLRequestError } from './api.js';
import { AUDIT_CHANGED, RUN_CHANGED, THREAD_AUDITS, THREAD_RUNS } from './queries.js';
import type { AuditView, RunView } from './timeline.js';

export interface ThreadSink {
  thread(thread: { title: string | null; ownerId: string }): void;
  runs(runs: RunView[]): void;
  run(run: RunView): void;
  audits(items: AuditView[], truncated: boolean): void;
  audit(audit: AuditView): void;
  /** Why this principal may not see the thread's audits (its runs are still shown). */
  auditsHidden(reason: string): void;
  failed(message: string): void;
}

/** Resubscribing and re-reading are cheap; the re-check closes the subscribe/read race. */
const RECHECK_MS = 1000;

export function followThread(client: Client, token: string, threadId: string, sink: ThreadSink): () => void {
  let stopped = false;
  let auditsReadable = true;
  const knownRuns = new Set<string>();
  const timers = new Set<ReturnType<typeof setTimeout>>();

  const readRuns = async () => {
    const { thread } = await gql<{ thread: { title: string | null; ownerId: string; runs: RunView[] } }>(token, THREAD_RUNS, { id: threadId });
    thread.runs.forEach((run) => knownRuns.add(run.id));
    if (stopped) return;
    sink.thread(thread);
    sink.runs(thread.runs);
  };
  const readAudits = async () => {
    try {
      const { threadAudits } = await gql<{ threadAudits: { items: AuditView[]; truncated: boolean } }>(token, THREAD_AUDITS, { threadId });
      if (!stopped) sink.audits(threadAudits.items, threadAudits.truncated);
    } catch (error) {
      if (error instanceof GraphQLRequestError && (error.code === 'FORBIDDEN' || error.code === 'NOT_FOUND')) {
        auditsReadable = false;
        sink.auditsHidden('Audits (model calls and tool executions) are shown to superadmins on their own threads only.');
      } else throw error;
    }
  };
  const refresh = async () => {
    try {
      await readRuns();
      if (auditsReadable) await readAudits();
    } catch (error) {
      if (!stopped) sink.failed(error instanceof Error ? error.message : String(error));
    }
  };
  const refreshSoon = () => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      void refresh();
    }, RECHECK_MS);
    timers.add(timer);
  };

  const unsubscribers: (() => void)[] = [];
  const subscribe = <T>(query: string, apply: (data: T) => void) =>
    unsubscribers.push(
      client.subscribe<T>(
        { query, variables: { threadId } },
        {
          next: ({ data }) => data && !stopped && apply(data as T),
          error: () => {}, // refused (access) or dropped: the snapshot read reports it
          complete: () => {},
        },
      ),
    );

  void (async () => {
    await refresh();
    if (stopped) return;
    subscribe<{ runChanged: RunView }>(RUN_CHANGED, ({ runChanged }) => {
      knownRuns.add(runChanged.id);
      sink.run(runChanged);
    });
    if (auditsReadable) {
      subscribe<{ auditChanged: AuditView }>(AUDIT_CHANGED, ({ auditChanged }) => {
        if (!knownRuns.has(auditChanged.runId)) void readRuns();
        sink.audit(auditChanged);
      });
    }
    unsubscribers.push(
      client.on('connected', () => {
        void refresh();
        refreshSoon();
      }),
    );
    refreshSoon();
  })();

  return () => {
    stopped = true;
    timers.forEach(clearTimeout);
    unsubscribers.forEach((unsubscribe) => unsubscribe());
  };
}
