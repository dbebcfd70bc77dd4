import { mintToken } from './auth/jwt.js';
import { loadConfig } from './config.js';
import { buildApp } from './server/app.js';

const config = loadConfig();
const app = await buildApp(config);
const url = await app.start();
console.log(`Agent audit server listening on ${url} (${app.db.kind === 'pglite' ? `embedded PGlite in ${config.embeddedInMemory ? 'memory' : config.dataDir}` : 'PostgreSQL'})`);
console.log(`Timeline page: ${new URL('/', url)} (sign in with a token below). GraphiQL: ${url}. Health: /healthz, readiness: /readyz`);
if (app.jwtSecretGenerated) {
  const hours = '12h';
  console.log(`\nLocal tokens (valid ${hours}; mint more with \`npm run token -- --sub <id> --role <role>\`):`);
  console.log(`  superadmin: Bearer ${await mintToken(app.jwtSecret, { sub: 'local-admin', role: 'superadmin' }, hours)}`);
  console.log(`  worker:     Bearer ${await mintToken(app.jwtSecret, { sub: 'local-worker', role: 'worker' }, hours)}`);
}

let exiting = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (exiting) return;
    exiting = true;
    console.log(`\n${signal}: draining requests and closing…`);
    app.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error('Shutdown failed:', error);
        process.exit(1);
      },
    );
  });
}
