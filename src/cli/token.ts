// npm run -s token -- --sub alice --role superadmin [--expires 1h]
import { decodeJwt } from 'jose';
import { loadConfig } from '../config.js';
import { LATEST_EXP_SECONDS, mintToken } from '../auth/jwt.js';
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
/** A mistake in the command line: one line, exit 2. */
function refuse(message: string): never {
  console.error(`${message} (--help lists the options)`);
  process.exit(2);
}
if (!values.sub) refuse('--sub is required: the id the token names, e.g. --sub alice');
if (!isRole(values.role)) refuse(`unknown role "${values.role}": use one of ${ROLES.join(', ')}`);
let secret: string;
try {
  secret = serverSigningSecretOf(loadConfig());
} catch (error) {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
}
const badExpires = `--expires must be a span in the future such as 1h or 30d, got "${values.expires}"`;
let token: string;
try {
  token = await mintToken(secret, { sub: values.sub, role: values.role }, values.expires);
} catch {
  refuse(badExpires);
}
// jose takes "0s" and "-1h" (or "1h ago"): a token that has expired when it is printed.
const { iat, exp } = decodeJwt(token);
if (exp! <= iat!) refuse(badExpires);
if (exp! > LATEST_EXP_SECONDS) refuse(`--expires must end before the year 5000, got "${values.expires}"`);
console.log(token);
