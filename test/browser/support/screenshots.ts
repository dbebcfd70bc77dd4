// Screenshots for the README: the browser tests write them to a temporary folder (SCREENSHOT_DIR,
// else <tmp>/audit-screenshots), never into the work tree; `npm run screenshots` copies them into docs/.
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';

export const screenshotDir = () => process.env.SCREENSHOT_DIR || join(tmpdir(), 'audit-screenshots');

export async function saveScreenshot(page: Page, name: string): Promise<void> {
  mkdirSync(screenshotDir(), { recursive: true });
  await page.screenshot({ path: join(screenshotDir(), name), fullPage: false });
}
