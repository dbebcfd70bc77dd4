import { initContextCache } from '@pothos/core';
import DataLoader from 'dataloader';
import type { Sql } from '../db/sql.js';
import {
  auditPayloadsByIds, auditsByIds, chatMessageCounts, chatMessagesOfThreads, runsOfThreads, type ThreadPage, messageContentSizesByIds, messageContentsByIds, runErrorSizesByIds, runErrorsByIds, runsByIds, threadsByIds, toolCallPayloadSizesByIds, toolCallPayloadsByIds,
  TOOL_CALL_PAYLOAD_BYTES, toolCallsByIdsOrDeclarers, toolCallsOfRuns, type Payload, type ToolCallPayload, type ToolCallRow, type WantedPayloads,
} from '../domain/audit-reads.js';
import type { DomainDeps } from '../domain/command.js';
import { notFound } from '../domain/errors.js';
import type { Message, Run } from '../generated/prisma/client.js';
import type { CommittedChange } from '../domain/events.js';
import { auditCountsOfRuns, auditCountsOfThreads, runCountsOfThreads, tokensOfRuns, tokensOfThreads, type AuditCounts, type TokenTotals } from '../domain/audit-summaries.js';
import { perEvent } from '../realtime/per-event.js';


/** A loader of one row per key, one statement per batch; a missing row is null. */
function rowsBy<Row>(read: (keys: readonly string[]) => Promise<Row[]>, keyOf: (row: Row) => string) {
  return new DataLoader<string, Row | null>(async (keys) => {
    const rows = new Map((await read(keys)).map((row) => [keyOf(row), row]));
    return keys.map((key) => rows.get(key) ?? null);
  });
}

/** A loader of the rows grouped under each key, one statement per batch, in the statement's order. */
const idOf = (row: { id: string }) => row.id;

/**
 * A row behind a foreign key from a row read earlier in the request: only a thread's deletion
 * removes it in between (after a lifecycle write's commit, before its answer is read), and a
 * deleted thread's rows are NOT_FOUND (SEMANTICS.md "Deletion and retention").
 */
export const goneWithItsThread = (id: string | null) => notFound('Row', `${id} (its thread was deleted)`);

/**
 * A loader of one value (a count, a total, a list) per run or thread, from a map read for the whole
 * batch in one statement with each key's thread's deletion mark (LIVE_THREAD): a key the map lacks
 * is its thread deleted (NOT_FOUND), never a zero, a null total or an empty list.
 */
function valuesOfLiveKeys<Value>(read: (keys: readonly string[]) => Promise<Map<string, Value>>) {
  return new DataLoader<string, Value>(async (keys) => {
    const found = await read(keys);
    return keys.map((key) => (found.has(key) ? found.get(key)! : goneWithItsThread(key)));
  });
}

/** One loader per page of a list (its arguments, `keyOf`), made when first asked for: each page's keys are read in one statement. */
function perPage<Page, Loader>(make: (page: Page) => Loader, keyOf: (page: Page) => string) {
  const loaders = new Map<string, Loader>();
  return (page: Page) => loaders.get(keyOf(page)) ?? loaders.set(keyOf(page), make(page)).get(keyOf(page))!;
}
const pageKey = (page: ThreadPage & { newestFirst?: boolean }) => `${page.first}:${page.after}:${page.newestFirst === true}`;

const byKey = <Row>(read: (keys: readonly string[]) => Promise<Row[]>, keyOf: (row: Row) => string) => async (keys: readonly string[]) =>
  new Map((await read(keys)).map((row) => [keyOf(row), row]));

/**
 * A loader of one payload (or one payload's size: `field`) of a row by id, one statement per
 * batch, which reads each payload only of the rows asked for it. A missing row is an error (the
 * row was read in the same request: its thread was deleted since, goneWithItsThread).
 */
function payloadsBy<Payload extends string, Row extends { id: string }>(
  read: (wanted: WantedPayloads<Payload>) => Promise<Row[]>,
  field: (payload: Payload) => keyof Row,
) {
  type Key = { id: string; payload: Payload };
  return new DataLoader<Key, unknown, string>(
    async (keys) => {
      const wanted = new Map<Payload, string[]>();
      for (const { id, payload } of keys) (wanted.get(payload) ?? wanted.set(payload, []).get(payload)!).push(id);
      const rows = new Map((await read(wanted)).map((row) => [row.id, row]));
      return keys.map(({ id, payload }) => {
        const row = rows.get(id);
        return row ? row[field(payload)] : goneWithItsThread(id);
      });
    },
    { cacheKeyFn: (key) => `${key.payload}:${key.id}` },
  );
}

/**
 * Tool calls by id and the tool calls each model audit declared: a timeline asks for both at
 * once (a tool audit's call, a model audit's declared calls), mostly the same rows, so one
 * statement a batch reads them.
 */
function toolCallLinks(read: Sql) {
  type Link = { by: 'id' | 'declarer'; id: string };
  const keyOf = (link: Link) => `${link.by}:${link.id}`;
  const links = new DataLoader<Link, ToolCallRow[], string>(
    async (keys) => {
      const idsOf = (by: Link['by']) => keys.filter((key) => key.by === by).map((key) => key.id);
      const rows = await toolCallsByIdsOrDeclarers(read, idsOf('id'), idsOf('declarer'));
      const found = new Map<string, ToolCallRow[]>();
      const listOf = (key: string) => found.get(key) ?? found.set(key, []).get(key)!;
      for (const { ofDeclarer, ...row } of rows) {
        const list = listOf(keyOf(ofDeclarer === null ? { by: 'id', id: row.id } : { by: 'declarer', id: ofDeclarer }));
        if (row.id !== null) list.push(row);
      }
      // A call by id that is not found is null (loadRequired says why); a declarer not found is its thread deleted.
      return keys.map((key) => found.get(keyOf(key)) ?? (key.by === 'id' ? [] : goneWithItsThread(key.id)));
    },
    { cacheKeyFn: keyOf },
  );
  return {
    toolCall: { load: async (id: string) => (await links.load({ by: 'id', id }))[0] ?? null },
    toolCallsDeclaredBy: { load: (auditId: string) => links.load({ by: 'declarer', id: auditId }) },
  };
}

export async function loadRequired<Row>(loader: { load(id: string): Promise<Row | null> }, id: string | null): Promise<Row> {
  const row = id === null ? null : await loader.load(id);
  if (row === null) throw goneWithItsThread(id);
  return row;
}

/**
 * Caches per request, or per published event for subscriptions (shared by that event's
 * subscribers: rows, never decisions); never across requests or events.
 */
export function createLoaders({ db: read }: DomainDeps) {
  return {
    audit: rowsBy((ids) => auditsByIds(read, ids), idOf),
    /** The payloads of audits, by id and payload: reads return audits without them (charged first: answer-payloads.ts). */
    auditPayload: payloadsBy((wanted: WantedPayloads<Payload>) => auditPayloadsByIds(read, wanted), (payload) => payload),
    thread: rowsBy((ids) => threadsByIds(read, ids), idOf),
    /** Runs without their error (typed as the whole run, as RunRef takes it: only its `error` field reads it, run.ts). */
    run: rowsBy((ids) => runsByIds(read, ids) as Promise<Run[]>, idOf),
    /** Runs' errors and their sizes (to charge before the errors are loaded), by id. */
    runErrorBytes: rowsBy((ids) => runErrorSizesByIds(read, ids), idOf),
    runError: rowsBy((ids) => runErrorsByIds(read, ids), idOf),
    ...toolCallLinks(read),
    /** The payloads of tool calls, and their sizes (to charge before the payloads are loaded), by id and payload. */
    toolCallPayload: payloadsBy((wanted: WantedPayloads<ToolCallPayload>) => toolCallPayloadsByIds(read, wanted), (payload) => payload),
    toolCallPayloadBytes: payloadsBy((wanted: WantedPayloads<ToolCallPayload>) => toolCallPayloadSizesByIds(read, wanted), (payload) => TOOL_CALL_PAYLOAD_BYTES[payload]),
    toolCallsOfRun: valuesOfLiveKeys((ids) => toolCallsOfRuns(read, ids)),
    /** Audit counts per run and per thread, and token totals (null: no usage with counts). */
    runAuditCounts: valuesOfLiveKeys(byKey<AuditCounts>((ids) => auditCountsOfRuns(read, ids), (row) => row.key)),
    threadAuditCounts: valuesOfLiveKeys(byKey<AuditCounts>((ids) => auditCountsOfThreads(read, ids), (row) => row.key)),
    runTokens: valuesOfLiveKeys<TokenTotals | null>((ids) => tokensOfRuns(read, ids)),
    threadTokens: valuesOfLiveKeys<TokenTotals | null>((ids) => tokensOfThreads(read, ids)),
    threadRunCounts: valuesOfLiveKeys(byKey((ids) => runCountsOfThreads(read, ids), (row) => row.threadId)),
    /** Ordinary messages' contents and their sizes (to charge before the contents are loaded), by id. */
    messageContentBytes: rowsBy((ids) => messageContentSizesByIds(read, ids), idOf),
    messageContent: rowsBy((ids) => messageContentsByIds(read, ids), idOf),
    /** A page of each thread's runs, without their errors (as `run`), or of its ordinary history, without the contents (as `messageContent`). */
    threadRuns: perPage((page: ThreadPage & { newestFirst?: boolean }) => valuesOfLiveKeys((ids) => runsOfThreads(read, ids, page) as Promise<Map<string, Run[]>>), pageKey),
    threadMessages: perPage((page: ThreadPage) => valuesOfLiveKeys((ids) => chatMessagesOfThreads(read, ids, page) as Promise<Map<string, Message[]>>), pageKey),
    /** Ordinary history only: audit rows are never counted. */
    chatMessageCount: valuesOfLiveKeys((threadIds) => chatMessageCounts(read, threadIds)),
  };
}

export type Loaders = ReturnType<typeof createLoaders>;

const loadersOnce = perEvent<Loaders>();

/**
 * Gives the context the loaders of this delivered event (a change, a burst of changes, a dashboard
 * view), made once per event by `create` and shared by every subscriber that receives it, and
 * fresh Pothos per-context caches: a subscription's context lives as long as the subscription, and
 * what one event loaded (a run's lease) must not be served to the next, nor kept for its whole life.
 */
export function loadersForEvent(context: { loaders: Loaders }, event: object, create: () => Loaders): void {
  context.loaders = loadersOnce(event, 'loaders', create);
  Object.assign(context, initContextCache());
}

/**
 * Starts, in one tick, the loads that a timeline's subscriber makes for each of several changes
 * delivered together (a catch-up page, one command's or batch's changes: the page's own document,
 * web/src/queries.ts: a run's audit summary and the run it resumed, a model call's declared tool
 * calls, a tool audit's call and the model call that declared it, the thread its access is checked
 * on), so that they are delivered with a statement per loader instead of a few per change
 * (bench/README.md, replay). A load that no subscriber asks for costs its share of one statement; a
 * failed one fails the field that asks for it, as alone.
 */
export function primedForBurst(loaders: Loaders, changes: readonly CommittedChange[]): Loaders {
  const loads: Promise<unknown>[] = [];
  for (const change of changes) {
    if (change.kind === 'run') {
      loads.push(loaders.runAuditCounts.load(change.row.id), loaders.runTokens.load(change.row.id));
      if (change.row.resumedFromId !== null) loads.push(loaders.run.load(change.row.resumedFromId));
    } else if (change.row.messageType === 'model_audit') {
      loads.push(loaders.toolCallsDeclaredBy.load(change.row.id));
    } else if (change.row.toolCallRowId !== null) {
      loads.push(loaders.toolCall.load(change.row.toolCallRowId).then((call) => call && loaders.audit.load(call.declaredById)));
    }
  }
  if (changes.length > 0) loads.push(loaders.thread.load(changes[0]!.threadId));
  for (const load of loads) load.catch(() => {});
  return loaders;
}
