// npx tsx bench/page.ts [--audits 5000] [--frames 240]
//
// The timeline page in Debian's Chromium (headless, offline) on one thread of `--audits` audits in
// one run, served by the server process (PGlite by default, PostgreSQL when DATABASE_URL is an
// admin URL). Measures, each against a floor from the same run:
// - time to the first rows: from navigating to the thread to its first rows on screen, against
//   the sign-in form (the same page's HTML and script, no data);
// - paging back to every audit (`Load older entries` until none is left);
// - scroll frame times: the rows scrolled 84 px (three rows) every animation frame, from top to
//   bottom and back, against the same frames with nothing scrolled;
// - opening a row whose output is 300 kB (a click to its output shown in the details panel),
//   against opening a row of the long thread (a small output), OPENS of each.
import { execFileSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { mintToken } from '../src/auth/jwt.js';
import { launchChromium } from '../test/browser/support/chromium.js';
import { openPgliteBackend, openPostgresBackend } from './lib/backend.js';
import { startServer } from './lib/server-process.js';
import { round, summarize, table } from './lib/stats.js';

const { values: flags } = parseArgs({ options: { audits: { type: 'string' }, frames: { type: 'string' } } });
const AUDITS = Number(flags.audits ?? 5000);
const FRAMES = Number(flags.frames ?? 240);
const OWNER = 'bench-page-owner';
const ROOT = fileURLToPath(new URL('../', import.meta.url));

execFileSync(process.execPath, [join(ROOT, 'scripts/build-web.mjs')]);
const backend = process.env.DATABASE_URL ? await openPostgresBackend(process.env.DATABASE_URL) : await openPgliteBackend();
const threadId = randomUUID();
const runId = randomUUID();
const bigThreadId = randomUUID();
const bigRunId = randomUUID();
const OPENS = 7;
await backend.beforeServer(async (sql) => {
  await sql.query(`INSERT INTO thread (id, owner_id, title) VALUES ($1, $2, 'bench: a long thread')`, [threadId, OWNER]);
  await sql.query(
    `INSERT INTO run (id, thread_id, status, lease_epoch, started_at, finished_at) VALUES ($1, $2, 'COMPLETED', 1, now() - interval '1 hour', now())`,
    [runId, threadId],
  );
  // Model calls, one after another over an hour (tool audits need their declaring call's rows:
  // the shape does not change what the page draws per row).
  await sql.query(
    `INSERT INTO message (id, thread_id, run_id, role, message_type, operation_id, name, sequence, status, started_at, finished_at, duration_ms, input, output, usage)
     SELECT gen_random_uuid(), $1, $2, 'ASSISTANT', 'model_audit', 'op-' || i, 'model-x', i, 'COMPLETED',
       now() - interval '1 hour' + i * interval '700 milliseconds', now() - interval '1 hour' + i * interval '700 milliseconds' + interval '500 milliseconds', 500,
       jsonb_build_object('q', 'question ' || i), jsonb_build_object('content', repeat('answer ', 40)), '{"input_tokens": 412, "output_tokens": 57}'::jsonb
     FROM generate_series(0, $3::int - 1) i`,
    [threadId, runId, AUDITS],
  );
  // Model calls whose output is 300 kB each (its JSON text).
  await sql.query(`INSERT INTO thread (id, owner_id, title) VALUES ($1, $2, 'bench: 300 kB outputs')`, [bigThreadId, OWNER]);
  await sql.query(
    `INSERT INTO run (id, thread_id, status, lease_epoch, started_at, finished_at) VALUES ($1, $2, 'COMPLETED', 1, now() - interval '1 minute', now())`,
    [bigRunId, bigThreadId],
  );
  await sql.query(
    `INSERT INTO message (id, thread_id, run_id, role, message_type, operation_id, name, sequence, status, started_at, finished_at, duration_ms, input, output)
     SELECT gen_random_uuid(), $1, $2, 'ASSISTANT', 'model_audit', 'big-' || i, 'model-x', i, 'COMPLETED',
       now() - interval '1 minute' + i * interval '1 second', now() - interval '1 minute' + i * interval '1 second' + interval '500 milliseconds', 500,
       jsonb_build_object('q', 'question ' || i), jsonb_build_object('content', repeat('x', 300000 - 14))
     FROM generate_series(1, $3::int) i`,
    [bigThreadId, bigRunId, OPENS],
  );
});
const secret = randomBytes(32).toString('hex');
const server = await startServer({ ...backend.serverEnv, AUTH_JWT_SECRET: secret });
const origin = new URL(server.url).origin;
const token = await mintToken(secret, { sub: OWNER, role: 'superadmin' }, '1h');
const browser = await launchChromium();
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  // Floor: the page itself, no data.
  const floorStart = Date.now();
  await page.goto(`${origin}/`);
  await page.waitForSelector('textarea[name=token]');
  const floorMs = Date.now() - floorStart;
  await page.fill('textarea[name=token]', token);
  await page.click('button[type=submit]');
  await page.waitForSelector('section.threads');
  // Time to the first rows, from a fresh load of the thread's address.
  const firstRows: number[] = [];
  page.on('pageerror', (error) => console.error(`page error: ${error.message}`));
  for (let i = 0; i < 3; i++) {
    await page.goto(`${origin}/`);
    await page.waitForSelector('section.threads');
    const start = Date.now();
    await page.goto(`${origin}/#thread=${threadId}`);
    await page.waitForSelector('.row-space .row.model', { timeout: 120_000 });
    firstRows.push(Date.now() - start);
  }
  const pagingStart = Date.now();
  while (await page.locator('[data-testid=load-older]').count()) {
    await page.click('[data-testid=load-older]');
    await page.waitForFunction(() => !document.querySelector('[data-testid=load-older]')?.hasAttribute('disabled'));
  }
  await page.waitForFunction((n) => document.querySelector('[data-testid=loaded-count]')?.textContent === `${n} entries loaded`, AUDITS);
  const pagingMs = Date.now() - pagingStart;
  const domRows = await page.locator('.row-space .row').count();

  /**
   * Frame intervals over FRAMES animation frames, scrolling the rows by `step` px each frame. A
   * string: tsx would wrap a function's inner functions in a helper the page does not have.
   */
  const frameTimes = (step: number) =>
    page.evaluate(`new Promise((resolve) => {
      const rows = document.querySelector('[data-testid=rows]');
      rows.scrollTop = 0;
      const times = [];
      let last = performance.now();
      let direction = 1;
      const tick = (now) => {
        times.push(now - last);
        last = now;
        if (${step}) {
          if (rows.scrollTop + rows.clientHeight >= rows.scrollHeight - 1) direction = -1;
          rows.scrollTop += direction * ${step};
        }
        if (times.length < ${FRAMES}) requestAnimationFrame(tick);
        else resolve(times.slice(1));
      };
      requestAnimationFrame(tick);
    })`) as Promise<number[]>;
  const idle = summarize(await frameTimes(0));
  const scrolling = summarize(await frameTimes(84));

  /** Milliseconds from a click on each of the first OPENS model rows in sight to its output in the details panel. */
  const openRows = async () => {
    const times: number[] = [];
    // The model rows in sight (only those are drawn; a click on one does not scroll).
    const keys = await page.evaluate(`(() => {
      const box = document.querySelector('[data-testid=rows]').getBoundingClientRect();
      return [...document.querySelectorAll('.row-space .row.model')]
        .filter((row) => { const r = row.getBoundingClientRect(); return r.top >= box.top + 30 && r.bottom <= box.bottom; })
        .map((row) => row.getAttribute('data-key')).slice(0, ${OPENS});
    })()`) as string[];
    for (const key of keys) {
      const start = Date.now();
      await page.click(`.row[data-key="${key}"]`);
      await page.waitForSelector(`.details[data-key="${key}"] .json-view[data-label=output] pre`, { timeout: 60_000 });
      times.push(Date.now() - start);
    }
    return summarize(times);
  };
  const smallOpen = await openRows();
  await page.goto(`${origin}/#thread=${bigThreadId}`);
  await page.waitForSelector('.row-space .row.model');
  const bigOpen = await openRows();
  const bigBytes = await page.locator('.details .json-view[data-label=output] h4 .muted').textContent();
  console.log(`${backend.version}; ${AUDITS} audits in one run; Chromium headless; ${domRows} rows in the DOM after loading all`);
  console.log(
    table(
      ['measure', 'value', 'floor', 'ratio'],
      [
        ['time to first rows (ms, median of 3)', summarize(firstRows).p50, floorMs, round(summarize(firstRows).p50 / floorMs)],
        [`page back to all ${AUDITS} (ms)`, pagingMs, null, null],
        ['scroll frame p50 (ms)', round(scrolling.p50), round(idle.p50), round(scrolling.p50 / idle.p50)],
        ['scroll frame p99 (ms)', round(scrolling.p99), round(idle.p99), round(scrolling.p99 / idle.p99)],
        ['scroll frame max (ms)', round(scrolling.max), round(idle.max), round(scrolling.max / idle.max)],
        [`open a row, output ${bigBytes} (ms, p50 of ${OPENS})`, bigOpen.p50, smallOpen.p50, round(bigOpen.p50 / smallOpen.p50)],
        [`open a row, output ${bigBytes} (ms, max of ${OPENS})`, bigOpen.max, smallOpen.max, round(bigOpen.max / smallOpen.max)],
      ],
    ),
  );
} finally {
  await browser.close();
  await server.stop();
  await backend.close();
}
