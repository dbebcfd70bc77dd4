// Every test file names its project in its suffix (vitest.config.ts): `.unit.` runs in
// `npm run test:unit` with no database, server or browser; `.int.` and `.e2e.` need them;
// `.isolated.` needs them too, and a process of its own.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';

it('every test file is .unit., .int., .e2e. or .isolated.', () => {
  const files = readdirSync(join(import.meta.dirname, '..'), { recursive: true })
    .map(String)
    .filter((name) => name.endsWith('.test.ts'));
  expect(files.length).toBeGreaterThan(50);
  expect(files.filter((name) => !/\.(unit|int|e2e|isolated)\.test\.ts$/.test(name))).toEqual([]);
});
