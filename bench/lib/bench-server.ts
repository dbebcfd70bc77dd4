import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { openPgliteBackend, openPostgresBackend } from './backend.js';
import { GraphQLHttp } from './graphql-http.js';
import { startServer } from './server-process.js';

/** The machine's load averages (1, 5, 15 min), for a bench's log lines. */
export const loadAverage = () => loadavg().map((value) => value.toFixed(2)).join(' ');

/**
 * A server process on the backend DATABASE_URL names (a scratch PostgreSQL database), else PGlite,
 * with a fresh token secret, the lease sweep out of the way, and an HTTP client to it; `close`
 * stops them all.
 */
export async function benchServer() {
  const backend = process.env.DATABASE_URL ? await openPostgresBackend(process.env.DATABASE_URL) : await openPgliteBackend();
  console.log(`${new Date().toISOString()} · ${backend.kind} · load average ${loadAverage()}`);
  const secret = randomBytes(32).toString('hex');
  const server = await startServer({ ...backend.serverEnv, AUTH_JWT_SECRET: secret, LEASE_SWEEP_INTERVAL_MS: '600000' });
  const http = new GraphQLHttp(server.url);
  return {
    backend,
    server,
    http,
    secret,
    async close() {
      http.close();
      await server.stop();
      await backend.close();
    },
  };
}
