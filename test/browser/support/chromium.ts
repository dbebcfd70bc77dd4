// Headless Debian Chromium as the browser tests and the page bench launch it: offline, every host
// but the loopback unresolvable.
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const browserRequired = process.env.REQUIRE_BROWSER === '1' || process.env.REQUIRE_SERVICES === '1';
export const haveChromium = existsSync(CHROMIUM);

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      // As on a machine without internet: every name but the loopback fails to resolve.
      '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
    ],
  });
}
