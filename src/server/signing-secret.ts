import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { loadOrCreateLocalSecret, readLocalSecret } from '../auth/jwt.js';
import { DEFAULT_DATA_DIR, type Config } from '../config.js';
import { ROLES } from '../domain/principal.js';

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

/**
 * The server's secret as another process finds it (the token tool, the simulator), from the same
 * AUTH_JWT_SECRET or DATA_DIR. Never created here: a secret the server does not hold signs tokens
 * it refuses. Throws a one-line message saying where it looked and what to do.
 */
export function serverSigningSecretOf(config: Config): string {
  if (config.jwtSecret) return config.jwtSecret;
  if (config.databaseUrl) throw new Error('AUTH_JWT_SECRET is not set: use the one the server on DATABASE_URL was started with');
  if (config.embeddedInMemory) {
    throw new Error(
      "AUTH_JWT_SECRET is not set, and a server on DATA_DIR=:memory: keeps its secret in memory, where no other process can read it: start the server and this command with the same AUTH_JWT_SECRET (e.g. `export AUTH_JWT_SECRET=$(openssl rand -base64 32)`)",
    );
  }
  const secret = readLocalSecret(config.dataDir);
  if (secret !== undefined) return secret;
  throw new Error(
    `No JWT secret: AUTH_JWT_SECRET is not set and ${resolve(config.dataDir, 'jwt-secret')} does not exist. Start the server first (its first start writes it), or pass the same DATA_DIR (or AUTH_JWT_SECRET) as the server's`,
  );
}

/** How to mint more tokens for this server, for its startup banner: with its DATA_DIR when that is not the default. */
export function howToMintTokens(config: Config): string {
  const command = `npm run -s token -- --sub <id> --role <${ROLES.join('|')}>`;
  if (config.jwtSecret) return `mint tokens with \`${command}\` and the same AUTH_JWT_SECRET`;
  if (config.embeddedInMemory) {
    return 'no other process can mint tokens for a server in memory: to mint more, start it and `npm run token` with the same AUTH_JWT_SECRET';
  }
  const dataDir = config.dataDir === DEFAULT_DATA_DIR ? '' : `DATA_DIR=${shellWord(resolve(config.dataDir))} `;
  return `mint tokens with \`${dataDir}${command}\``;
}

const shellWord = (text: string) => (/^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`);
