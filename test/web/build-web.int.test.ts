// The page's build replaces web/dist while servers serve it: an operator rebuilds under a running
// server, and every browser test file rebuilds while the others' servers serve. A read during a
// build must get a whole file, old or new: a cut app.js leaves a blank page (CI once saw a sign-in
// form that never came).
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const REPO_ROOT = join(import.meta.dirname, '../..');
const run = promisify(execFile);

it('serves whole files while the page is rebuilt', async () => {
  await run(process.execPath, ['scripts/build-web.mjs'], { cwd: REPO_ROOT });
  const files = ['app.js', 'app.css', 'chart.js', 'diff.js', 'index.html'];
  const whole = new Map(await Promise.all(files.map(async (file) => [file, await readFile(join(REPO_ROOT, 'web/dist', file))] as const)));
  let building = true;
  const builds = (async () => {
    for (let i = 0; i < 5; i++) await run(process.execPath, ['scripts/build-web.mjs'], { cwd: REPO_ROOT });
    building = false;
  })();
  const cut: string[] = [];
  let reads = 0;
  while (building) {
    for (const file of files) {
      const body = await readFile(join(REPO_ROOT, 'web/dist', file));
      reads++;
      if (!body.equals(whole.get(file)!)) cut.push(`${file}: ${body.byteLength} of ${whole.get(file)!.byteLength} bytes`);
    }
  }
  await builds;
  expect(reads).toBeGreaterThan(100);
  expect(cut).toEqual([]);
}, 120_000);
