import type { AddressInfo } from 'node:net';
import { constants } from 'node:os';
import { mintToken } from './auth/jwt.js';
import { defaultInstanceId, loadConfig, type Config } from './config.js';
import { endCreation } from './db/new-pglite.js';
import { errorFields, log, outsideErrorFields } from './log.js';
import { buildApp, type App } from './server/app.js';
import { howToMintTokens } from './server/signing-secret.js';
import { installProcessGuards } from './server/process-guards.js';
import { listenWhileStarting } from './server/starting.js';

/** A start that cannot go on: one line saying why (never a stack), exit 1. */
function cannotStart(error: unknown): never {
  log.fatal({ error: outsideErrorFields(error) }, `cannot start: ${errorFields(error).message}`);
  process.exit(1);
}

let config: Config;
/** Set once built: a signal before that ends the start (stopWhileStarting), after it drains. */
let app: App | undefined;

// Listened for from the first line: a stop during the start (migrations may take minutes) is said,
// not a silent death by the signal. Once the app is built, the first signal drains (bounded by
// SHUTDOWN_DRAIN_MS + SHUTDOWN_TIMEOUT_MS, after which app.stop cuts every connection; the process
// exits 5 s later whatever is left); a second one exits at once.
let exiting = false;
/** SIGTERM (an orchestrator's stop) first answers /readyz 503 for SHUTDOWN_DRAIN_MS, so a load
 * balancer stops sending before the listener closes; SIGINT (Ctrl-C) and a fault close at once. */
function shutDown(reason: string, exitCode: number, drainMs = 0): void {
  if (exiting) return;
  exiting = true;
  if (!app) return stopWhileStarting(reason, exitCode);
  log.info({ reason, drainMs, timeoutMs: config.shutdownTimeoutMs }, `${reason}: draining requests and closing`);
  setTimeout(() => {
    log.error('shutdown did not finish in time: exiting');
    process.exit(1);
  }, drainMs + config.shutdownTimeoutMs + 5000).unref();
  app.stop({ drainMs }).then(
    () => {
      log.info('stopped');
      process.exit(exitCode);
    },
    (error: unknown) => {
      log.error({ error: errorFields(error) }, 'shutdown failed');
      process.exit(1);
    },
  );
}
/**
 * The same signal again this soon is the same stop delivered twice, not an operator's second
 * one: `npm start` forwards to the server the signal its whole process group already got (Ctrl-C,
 * systemd's control-group kill, `timeout`).
 */
const REPEAT_WITHIN_MS = 1000;
let firstSignal: { signal: NodeJS.Signals; at: number } | undefined;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (firstSignal?.signal === signal && Date.now() - firstSignal.at < REPEAT_WITHIN_MS) {
      log.info({ signal }, `${signal} repeated within ${REPEAT_WITHIN_MS} ms: the same stop, still draining`);
      return;
    }
    firstSignal ??= { signal, at: Date.now() };
    if (exiting) {
      log.warn({ signal }, `${signal} again: exiting now`);
      process.exit(128 + constants.signals[signal]);
    }
    shutDown(signal, 0, signal === 'SIGTERM' ? config.shutdownDrainMs : 0);
  });
}

/**
 * Before the app serves there is nothing to drain (every request but /healthz is answered 503):
 * exit now, once the creation of a new embedded database under way (a process of its own) is
 * ended, so that nothing goes on writing DATA_DIR after the exit. A migration under way is left to
 * PostgreSQL: one in a transaction rolls back when its connection ends, an online one is taken up
 * again by the next start (src/db/migrate.ts).
 */
function stopWhileStarting(reason: string, exitCode: number): void {
  log.info({ reason }, `${reason} during start-up: exiting before serving`);
  void endCreation().finally(() => process.exit(exitCode));
}

try {
  config = loadConfig();
  // The port answers from now on (/healthz 200, /readyz 503) while migrations run.
  const listening = await listenWhileStarting(config.port, config.host, config.corsOrigins);
  if (config.instanceId === defaultInstanceId(0)) config.instanceId = defaultInstanceId((listening.address() as AddressInfo).port);
  app = await buildApp(config, { listening });
} catch (error) {
  cannotStart(error);
}
const built: App = app;
// Tokens are printed once, when the local secret is generated, never on every start (logs are
// collected and kept); `npm run token` mints more. Minted before the app serves on its port (until
// then /readyz answers 503), so the whole banner is out by the time the server is ready (a client
// watching the log for them never misses them).
const hours = '12h';
const localTokens = built.jwtSecretGenerated && {
  superadmin: await mintToken(built.jwtSecret, { sub: 'local-admin', role: 'superadmin' }, hours),
  worker: await mintToken(built.jwtSecret, { sub: 'local-worker', role: 'worker' }, hours),
};
const url = await built.start().catch(cannotStart);
const database = built.db.kind === 'pglite' ? `embedded PGlite in ${config.embeddedInMemory ? 'memory' : config.dataDir}` : 'PostgreSQL';
const { mode } = built;
log.info(
  { url, database: built.db.kind, ...mode, instanceId: config.instanceId },
  `Agent audit server listening on ${url} (${database}; live updates: ${mode.liveUpdates}; export ${mode.export}; retention ${mode.retention})`,
);
log.info(`Timeline page: ${new URL('/', url)} (sign in with a token). GraphiQL: ${url}. Health: /healthz, readiness: /readyz`);
if (localTokens) {
  // The tokens alone, so a copy is one whole token: a client adds "Bearer " in the header.
  console.log(`\nLocal tokens (valid ${hours}; printed only now; send one as the header "Authorization: Bearer <token>"; ${howToMintTokens(config)}):`);
  console.log(`  superadmin token: ${localTokens.superadmin}`);
  console.log(`  worker token:     ${localTokens.worker}`);
} else if (config.jwtSecret === undefined) {
  // The secret generated under DATA_DIR: its start printed them. With AUTH_JWT_SECRET none ever does.
  log.info(`Tokens are printed on the first start only: ${howToMintTokens(config)}.`);
} else {
  log.info(`Tokens: ${howToMintTokens(config)}.`);
}

installProcessGuards((reason) => shutDown(reason, 1));
