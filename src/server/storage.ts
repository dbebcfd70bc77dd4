import type { Config } from '../config.js';
import { openDatabase, type Database } from '../db/database.js';
import { migrate } from '../db/migrate.js';
import { changesAfter, pruneRecentChanges, threadCursors } from '../domain/change-cursors.js';
import { databaseIdentity, exportHeldSince } from '../domain/database-identity.js';
import { readOwnersToolActivity } from '../domain/tool-activity.js';
import { pollToolAuditChanges } from '../domain/tool-activity-changes.js';
import { log } from '../log.js';
import type { Clock } from '../realtime/activity-feeds.js';
import { createPubSubFor, keepsRecentChanges } from '../realtime/pubsub.js';

export type ChangeFeeds = Awaited<ReturnType<typeof createPubSubFor>>;

/**
 * The database (opened unless one is given, then migrated) and the change feeds that read it
 * (pub/sub, over Redis when REDIS_URL is set). A start that fails here closes the database it
 * opened: a server that cannot start leaves nothing open behind it.
 */
export async function openStorage(
  config: Config,
  options: { database?: Database; maxPendingEvents?: number; activityClock?: Clock; maxUnsentSignals?: number },
): Promise<{ db: Database; feeds: ChangeFeeds; databaseId: string; exportHeldSince?: Date }> {
  const recentChanges = keepsRecentChanges(config);
  const db =
    options.database ??
    (await openDatabase({
      url: config.databaseUrl,
      dataDir: config.embeddedInMemory ? undefined : config.dataDir,
      poolSize: config.databasePoolSize,
      statementTimeoutMs: config.databaseStatementTimeoutMs,
      recentChanges,
    }));
  try {
    await migrate(db.driver);
    const { databaseId, restored } = await databaseIdentity(db.sql);
    if (restored) {
      log.warn(
        { databaseId, ...restored },
        'this database is a restore or a copy: a new database id (change cursors from before are refused), the leases it held fenced, and the export held until released (docs/operations.md, "Backup and restore")',
      );
    }
    const heldSince = await exportHeldSince(db.sql);
    const feeds = await createPubSubFor(
      config,
      {
        changesAfter: (threadId, after, limit) => changesAfter(db.driver, threadId, after, limit, recentChanges),
        ...(recentChanges && { pruneRecentChanges: () => pruneRecentChanges(db.sql) }),
        threadCursors: (threadIds) => threadCursors(db.sql, threadIds),
        toolActivity: (reads) => readOwnersToolActivity(db.sql, reads),
        pollToolAuditChanges: (ownerIds, previousBound) => pollToolAuditChanges(db.sql, ownerIds, previousBound),
      },
      { maxPendingEvents: options.maxPendingEvents, activityClock: options.activityClock, maxUnsentSignals: options.maxUnsentSignals },
    );
    return { db, feeds, databaseId, exportHeldSince: heldSince };
  } catch (error) {
    if (!options.database) await db.close();
    throw error;
  }
}
