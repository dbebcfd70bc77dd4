import { constants } from 'node:os';
import { mintToken } from './auth/jwt.js';
import { loadConfig } from './config.js';
import { StartupError } from './db/driver.js';
import { buildApp } from './server/app.js';

const config = loadConfig();
const app = await buildApp(config).catch((error: unknown) => {
  if (!(error instanceof StartupError)) throw error;
  console.error(error.message);
  process.exit(1);
});
// Tokens are printed once, when the local secret is generated, never on every start (logs are
// collected and kept); `npm run token` mints more. Minted before listening, so the whole banner
// is out by the time the server answers (a client watching the log for them never misses them).
const hours = '12h';
const localTokens = app.jwtSecretGenerated && {
  superadmin: await mintToken(app.jwtSecret, { sub: 'local-admin', role: 'superadmin' }, hours),
  worker: await mintToken(app.jwtSecret, { sub: 'local-worker', role: 'worker' }, hours),
};
const url = await app.start();
console.log(`Agent audit server listening on ${url} (${app.db.kind === 'pglite' ? `embedded PGlite in ${config.embeddedInMemory ? 'memory' : config.dataDir}` : 'PostgreSQL'})`);
console.log(`Timeline page: ${new URL('/', url)} (sign in with a token). GraphiQL: ${url}. Health: /healthz, readiness: /readyz`);
if (localTokens) {
  // The tokens alone, so a copy is one whole token: a client adds "Bearer " in the header.
  console.log(`\nLocal tokens (valid ${hours}; printed only now; send one as the header "Authorization: Bearer <token>"; mint more with \`npm run -s token -- --sub <id> --role <role>\`):`);
  console.log(`  superadmin token: ${localTokens.superadmin}`);
  console.log(`  worker token:     ${localTokens.worker}`);
} else {
  console.log('Mint a token with `npm run -s token -- --sub <id> --role <superadmin|admin|user|worker>`.');
}

// The first signal drains (bounded by SHUTDOWN_TIMEOUT_MS, after which app.stop cuts every
// connection; the process exits 5 s later whatever is left); a second one exits at once.
let exiting = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (exiting) {
      console.log(`${signal} again: exiting now`);
      process.exit(128 + constants.signals[signal]);
    }
    exiting = true;
    console.log(`\n${signal}: draining requests and closing (at most ${config.shutdownTimeoutMs} ms)…`);
    setTimeout(() => {
      console.error('Shutdown did not finish in time: exiting');
      process.exit(1);
    }, config.shutdownTimeoutMs + 5000).unref();
    app.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error('Shutdown failed:', error);
        process.exit(1);
      },
    );
  });
}
