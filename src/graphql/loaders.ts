import DataLoader from 'dataloader';
import type { PrismaClient } from '../generated/prisma/client.js';

/** Per-request (per-event, for subscriptions) caches: never shared between requests. */
export function createLoaders(prisma: PrismaClient) {
  return {
    threadOwner: new DataLoader<string, string | null>(async (ids) => {
      const threads = await prisma.thread.findMany({ where: { id: { in: [...ids] } }, select: { id: true, ownerId: true } });
      const owners = new Map(threads.map((thread) => [thread.id, thread.ownerId]));
      return ids.map((id) => owners.get(id) ?? null);
    }),
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
