import { mintToken } from '../../src/auth/jwt.js';
import type { Role } from '../../src/domain/principal.js';
import { loadConfig, type Config } from '../../src/config.js';
import { openDatabase } from '../../src/db/database.js';
import { DATABASE_CLOCK_READ } from '../../src/domain/ids.js';
import { keepsRecentChanges } from '../../src/realtime/pubsub.js';
import type { Clock } from '../../src/realtime/activity-feeds.js';
import { buildApp, type App } from '../../src/server/app.js';
import { createScratchDatabase, onPostgres } from './database.js';
import { postgresTemplateDatabase } from './database-templates.js';
import { borrowMigratedPglite } from './pglite-pool.js';
import type { TestStorage } from './storage.js';

export const TEST_JWT_SECRET = 'test-secret-that-is-long-enough-for-hs256';

export interface GraphQLResponse<T = any> {
  data?: T | null;
  errors?: { message: string; path?: (string | number)[]; extensions?: { code?: string; [key: string]: unknown } }[];
}

export interface TestApp {
  app: App;
  config: Config;
  /** A token for `sub` with `role`, signed with the test secret. */
  token(sub: string, role: Role): Promise<string>;
  /** Runs one operation in process through yoga's fetch. */
  gql<T = any>(query: string, variables?: Record<string, unknown>, token?: string | null): Promise<GraphQLResponse<T>>;
  /** Takes the database away under the running app, as a lost server would: every query fails from then on. */
  loseDatabase(): Promise<void>;
  /** Stops the app and drops its scratch database. */
  close(): Promise<void>;
}

export interface TestAppOptions {
  /** An existing database to share (another instance's), instead of a fresh one. */
  databaseUrl?: string;
  /** A database that outlives this app (a restart reads what it wrote), instead of a fresh one. */
  storage?: TestStorage;
  /** Sees every SQL statement Prisma sends, e.g. to count a request's statements. */
  onQuery?: (sql: string) => void;
  /** How many changes a subscriber may hold queued before it catches up from the database (small, to make it fall behind). */
  maxPendingEvents?: number;
  /** The dashboards' clock (test/support/moved-clock.ts), to move instead of waiting. */
  activityClock?: Clock;
  /** How many threads or owners an instance holds unsent while Redis is away before it holds "everything changed" instead (small, to reach it). */
  maxUnsentSignals?: number;
}

/** The app on `scratchUrl` (or the options' database, or an in-memory PGlite), with the database it opened. */
async function openTestApp(env: Record<string, string>, options: TestAppOptions, scratchUrl: string | undefined) {
  const config = loadConfig({
    AUTH_JWT_SECRET: TEST_JWT_SECRET,
    DATA_DIR: ':memory:',
    LEASE_SWEEP_INTERVAL_MS: '200',
    ...options.storage?.env,
    ...(options.databaseUrl ? { DATABASE_URL: options.databaseUrl } : scratchUrl ? { DATABASE_URL: scratchUrl } : {}),
    ...env,
  });
  const { maxPendingEvents, activityClock, maxUnsentSignals } = options;
  // The statements requests send: the embedded database's checkpoint probe and the checkpoint it
  // runs once a pooled database's log has grown past CHECKPOINT_AFTER_BYTES (src/server/wal-checkpoints.ts),
  // and the read of the database's clock for new ids (src/domain/ids.ts), run on their own timers and
  // would land in a count now and then.
  const onQuery =
    options.onQuery && ((sql: string) => void (sql.includes('pg_current_wal_lsn') || sql === 'CHECKPOINT' || sql === DATABASE_CLOCK_READ || options.onQuery!(sql)));
  // Opened here as buildApp would open it, but an in-memory one migrated (and reused: pglite-pool.ts).
  const embedded = !config.databaseUrl && config.embeddedInMemory ? await borrowMigratedPglite() : undefined;
  const database =
    onQuery || embedded
      ? await openDatabase({
          url: config.databaseUrl,
          dataDir: config.embeddedInMemory ? undefined : config.dataDir,
          embedded: embedded?.pglite,
          onQuery,
          recentChanges: keepsRecentChanges(config),
        })
      : undefined;
  const app = await buildApp(config, { database, maxPendingEvents, activityClock, maxUnsentSignals }).catch(async (error: unknown) => {
    await database?.close();
    await embedded?.giveBack();
    throw error;
  });
  return { app, config, embedded };
}

/** Env-style overrides, e.g. { LEASE_MIN_SECONDS: '1' }. */
export async function startTestApp(env: Record<string, string> = {}, options: TestAppOptions = {}): Promise<TestApp> {
  const scratch = options.databaseUrl || options.storage || !onPostgres ? null : await createScratchDatabase(undefined, postgresTemplateDatabase());
  // A start that fails (a bad setting, say) drops its scratch database too.
  const { app, config, embedded } = await openTestApp(env, options, scratch?.url).catch(async (error: unknown) => {
    await scratch?.drop();
    throw error;
  });
  return {
    app,
    config,
    token: (sub, role) => mintToken(TEST_JWT_SECRET, { sub, role }),
    async gql(query, variables, token) {
      const response = await app.yoga.fetch('http://test/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: JSON.stringify({ query, variables }),
      });
      return (await response.json()) as GraphQLResponse;
    },
    async loseDatabase() {
      await app.db.close();
      await embedded?.giveBack();
    },
    // After loseDatabase the stop fails; the scratch database is dropped all the same.
    async close() {
      try {
        await app.stop();
      } finally {
        await embedded?.giveBack();
        await scratch?.drop();
      }
    },
  };
}

/** The `extensions.code` of the first error, for compact assertions. */
export const errorCode = (response: GraphQLResponse) => response.errors?.[0]?.extensions?.code;
