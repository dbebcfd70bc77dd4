import DataLoader from 'dataloader';
import { auditsByIds, runsByIds, threadsByIds, toolCallsByIds, toolCallsDeclaredBy, toolCallsOfRuns } from '../domain/audit-reads.js';
import type { DomainDeps } from '../domain/command.js';

/** A loader of one row per key, one statement per batch; a missing row is null. */
function rowsBy<Row>(read: (keys: readonly string[]) => Promise<Row[]>, keyOf: (row: Row) => string) {
  return new DataLoader<string, Row | null>(async (keys) => {
    const rows = new Map((await read(keys)).map((row) => [keyOf(row), row]));
    return keys.map((key) => rows.get(key) ?? null);
  });
}

/** A loader of the rows grouped under each key, one statement per batch, in the statement's order. */
function rowsGroupedBy<Row>(read: (keys: readonly string[]) => Promise<Row[]>, keyOf: (row: Row) => string) {
  return new DataLoader<string, Row[]>(async (keys) => {
    const groups = new Map<string, Row[]>(keys.map((key) => [key, []]));
    for (const row of await read(keys)) groups.get(keyOf(row))?.push(row);
    return keys.map((key) => groups.get(key)!);
  });
}

const idOf = (row: { id: string }) => row.id;

/** A row the schema guarantees (a foreign key): its absence is a server error, not a null. */
export async function loadRequired<Row>(loader: DataLoader<string, Row | null>, id: string | null): Promise<Row> {
  const row = id === null ? null : await loader.load(id);
  if (row === null) throw new Error(`Row ${id} is missing behind a foreign key`);
  return row;
}

/**
 * Caches per request, or per published event for subscriptions (shared by that event's
 * subscribers: rows, never decisions); never across requests or events.
 */
export function createLoaders({ prisma, read }: DomainDeps) {
  return {
    audit: rowsBy((ids) => auditsByIds(read, ids), idOf),
    thread: rowsBy((ids) => threadsByIds(read, ids), idOf),
    run: rowsBy((ids) => runsByIds(read, ids), idOf),
    toolCall: rowsBy((ids) => toolCallsByIds(read, ids), idOf),
    toolCallsDeclaredBy: rowsGroupedBy((ids) => toolCallsDeclaredBy(read, ids), (toolCall) => toolCall.declaredById),
    toolCallsOfRun: rowsGroupedBy((ids) => toolCallsOfRuns(read, ids), (toolCall) => toolCall.runId),
    /** Ordinary history only: audit rows are never counted. */
    chatMessageCount: new DataLoader<string, number>(async (threadIds) => {
      const groups = await prisma.message.groupBy({
        by: ['threadId'],
        where: { threadId: { in: [...threadIds] }, messageType: 'chat' },
        _count: { _all: true },
      });
      const counts = new Map(groups.map((group) => [group.threadId, group._count._all]));
      return threadIds.map((id) => counts.get(id) ?? 0);
    }),
  };
}

export type Loaders = ReturnType<typeof createLoaders>;
