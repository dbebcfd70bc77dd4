import { createRequire } from 'node:module';
import { configDefaults, defineConfig } from 'vitest/config';

const require = createRequire(import.meta.url);

const UNIT = 'test/**/*.unit.test.ts';
/** Tests that read the whole process's state (its peak memory): each file in a process of its own. */
const ISOLATED = 'test/**/*.isolated.test.ts';

export default defineConfig({
  resolve: {
    // graphql ships ESM and CJS builds; libraries loaded through either must share one copy.
    alias: { graphql: require.resolve('graphql') },
  },
  test: {
    pool: 'forks',
    maxWorkers: 3,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // expect.poll waits 1 s by default: on a loaded 2-core CI machine a search round trip and its
    // render took longer. A test that claims a time ("within 1 s") passes its own timeout.
    expect: { poll: { timeout: 10_000 } },
    projects: [
      // No database, no server, no browser: `npm run test:unit` runs these alone, in seconds.
      { extends: true, test: { name: 'unit', include: [UNIT], isolate: false } },
      // A real database (one migrated copy per run: test/global-setup.ts), servers, browsers.
      { extends: true, test: { name: 'integration', include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, UNIT, ISOLATED], globalSetup: ['test/global-setup.ts'], isolate: false } },
      { extends: true, test: { name: 'isolated', include: [ISOLATED], globalSetup: ['test/global-setup.ts'], isolate: true } },
    ],
  },
});
