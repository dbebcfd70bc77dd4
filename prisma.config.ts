import { defineConfig } from 'prisma/config';

// Only `prisma generate` runs here (see scripts/generate-prisma.mjs); migrations are SQL files
// applied by the server itself at start-up (src/db/migrate.ts).
export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
});
