// npm run screenshots: runs the browser tests that take the README's screenshots, with their
// output in a fresh temporary folder, then copies those pictures into docs/ (on purpose only:
// `npm test` writes them to a temporary folder and never touches the work tree).
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'audit-screenshots-'));
try {
  execFileSync('npx', ['vitest', 'run', 'test/browser/timeline-page.e2e.test.ts', 'test/browser/timeline-debugging.e2e.test.ts', 'test/browser/activity-page.e2e.test.ts', 'test/browser/failures.e2e.test.ts'], {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, SCREENSHOT_DIR: dir, REQUIRE_BROWSER: '1' },
  });
  for (const file of readdirSync(dir).filter((name) => name.endsWith('.png'))) {
    copyFileSync(join(dir, file), join(root, 'docs', file));
    console.log(`docs/${file}`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
