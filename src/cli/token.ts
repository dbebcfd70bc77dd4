// npm run -s token -- --sub alice --role superadmin [--expires 1h]
import { loadConfig } from '../config.js';
import { mintToken } from '../auth/jwt.js';
import { ROLES, isRole } from '../domain/principal.js';
import { serverSigningSecretOf } from '../server/signing-secret.js';
import { parseCliArgs } from './args.js';

const USAGE = `usage: npm run -s token -- --sub <id> --role <${ROLES.join('|')}> [--expires 30d]

Prints a bearer token (an HS256 JWT, without "Bearer ") signed with AUTH_JWT_SECRET, or with the
embedded server's secret in DATA_DIR (default .data/jwt-secret). --expires: a span such as 1h or
30d (default 30d). With npm's -s the output is the token alone:
  TOKEN=$(npm run -s token -- --sub alice --role superadmin)`;

const values = parseCliArgs(
  {
    sub: { type: 'string' },
    role: { type: 'string', default: 'user' },
    expires: { type: 'string', default: '30d' },
  },
  USAGE,
);
if (!values.sub || !isRole(values.role)) {
  console.error(USAGE);
  process.exit(2);
}
let secret: string;
try {
  secret = serverSigningSecretOf(loadConfig());
} catch (error) {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
}
let token: string;
try {
  token = await mintToken(secret, { sub: values.sub, role: values.role }, values.expires);
} catch {
  console.error(`--expires must be a span such as 1h or 30d, got "${values.expires}"\n\n${USAGE}`);
  process.exit(2);
}
console.log(token);
