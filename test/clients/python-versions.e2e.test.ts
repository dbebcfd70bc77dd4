// The Python client's own unittest suite on every other Python the README claims (3.9 or later)
// that is installed here; a file of its own, so that it runs beside the other Python tests.
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { backendName } from '../support/database.js';
import { run } from './run-command.js';

const CLIENT_DIR = join(import.meta.dirname, '../../clients/python');

// The README says Python 3.9 or later: the suite runs on every other version installed here
// (tests/interpreters.py: python3.N on PATH, pyenv's versions), two at a time (their lease
// tests wait on timers; more at once on two cores made them late), each with a server of its
// own (one embedded database serving all of them was too slow for their leases). The client
// does not depend on the server's backend: on one pass of CI only.
it.skipIf(backendName !== 'PGlite')('the same suite passes on every other Python 3.9+ installed here', async () => {
  const listed = await run('python3', ['-m', 'tests.interpreters'], { cwd: CLIENT_DIR, timeoutMs: 120_000 });
  expect(listed.code, listed.output).toBe(0);
  const others = [...listed.output.matchAll(/^(\d+\.\d+\.\d+) (\S+)$/gm)].map(([, version, path]) => ({ version: version!, path: path! }));
  console.log(`the Python client's suite on ${others.map(({ version }) => `Python ${version}`).join(', ') || 'no other Python'}`);
  const suites: { code: number | null; output: string }[] = [];
  const AT_ONCE = 2;
  for (let first = 0; first < others.length; first += AT_ONCE) {
    const batch = others.slice(first, first + AT_ONCE);
    suites.push(...(await Promise.all(batch.map(({ path }) => run(path, ['-m', 'unittest'], { cwd: CLIENT_DIR, env: { AUDIT_URL: '', AUDIT_JWT_SECRET: '' }, timeoutMs: 900_000 })))));
  }
  others.forEach(({ version }, i) => {
    expect(suites[i]!.code, `Python ${version}:\n${suites[i]!.output}`).toBe(0);
    expect(suites[i]!.output, `Python ${version}`).not.toMatch(/skipped/);
  });
}, 2_400_000);
