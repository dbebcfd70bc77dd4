// `prisma generate` never calls the schema engine, but the CLI insists on having one and would
// download it from a host we cannot reach. Point it at any existing file instead.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { delimiter, resolve } from 'node:path';

if (!existsSync('node_modules/prisma')) process.exit(0);
execFileSync(process.execPath, ['node_modules/prisma/build/index.js', 'generate'], {
  stdio: 'inherit',
  env: {
    ...process.env,
    // The pothos generator is a bin of @pothos/plugin-prisma.
    PATH: [resolve('node_modules/.bin'), process.env.PATH].join(delimiter),
    PRISMA_SCHEMA_ENGINE_BINARY: process.env.PRISMA_SCHEMA_ENGINE_BINARY ?? process.execPath,
    PRISMA_HIDE_UPDATE_MESSAGE: '1',
    CHECKPOINT_DISABLE: '1',
  },
});
