// npm run token -- --sub alice --role superadmin [--expires 1h]
import { parseArgs } from 'node:util';
import { loadConfig } from '../config.js';
import { loadOrCreateLocalSecret, mintToken } from '../auth/jwt.js';
import { ROLES, isRole } from '../auth/principal.js';

const { values } = parseArgs({
  options: {
    sub: { type: 'string' },
    role: { type: 'string', default: 'user' },
    expires: { type: 'string', default: '30d' },
  },
});
if (!values.sub || !isRole(values.role)) {
  console.error(`usage: npm run token -- --sub <id> --role <${ROLES.join('|')}> [--expires 30d]`);
  process.exit(2);
}
const config = loadConfig();
const secret = config.jwtSecret ?? loadOrCreateLocalSecret(config.dataDir).secret;
console.log(await mintToken(secret, { sub: values.sub, role: values.role }, values.expires));
