import { randomBytes } from 'node:crypto';
import { loadOrCreateLocalSecret } from '../auth/jwt.js';
import type { Config } from '../config.js';

/**
 * The secret tokens are signed with: AUTH_JWT_SECRET; else, for embedded PGlite only, one kept in
 * the data directory (or one per start, in memory). `generated`: created by this start (the first
 * start on a data directory), so the entry file prints tokens for it.
 */
export function signingSecretOf(config: Config): { secret: string; generated: boolean } {
  if (config.jwtSecret) return { secret: config.jwtSecret, generated: false };
  if (config.databaseUrl) throw new Error('AUTH_JWT_SECRET must be set when DATABASE_URL points at a server');
  if (config.embeddedInMemory) return { secret: randomBytes(32).toString('base64url'), generated: true };
  const { secret, created } = loadOrCreateLocalSecret(config.dataDir);
  return { secret, generated: created };
}
