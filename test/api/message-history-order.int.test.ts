import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { onPostgres } from '../support/database.js';
import { eventually } from '../support/streams.js';

// Thread.messages pages oldest first with `after`: a reader that has read the history up to a
// message, then asks for the messages after it, must get every message it has not seen. Two
// appends to one thread committing in the other order than they were stamped broke that: the
// later-stamped one, committed first, was read; the earlier-stamped one then committed before it
// in the order, and no `after` ever returned it. Only PostgreSQL runs two writes at once (PGlite
// has one connection), so the race is made there: a trigger holds the first append inside its
// transaction, on an advisory lock the test holds.

const HELD = 'held by the test';
const LOCK_KEY = 73_310_001;

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
  if (!onPostgres) return;
  await t.app.db.sql.query(`CREATE OR REPLACE FUNCTION test_hold_append() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN IF NEW.content ->> 'text' = '${HELD}' THEN PERFORM pg_advisory_xact_lock(${LOCK_KEY}); END IF; RETURN NEW; END $$`);
  await t.app.db.sql.query(`CREATE TRIGGER test_hold_append BEFORE INSERT ON message FOR EACH ROW EXECUTE FUNCTION test_hold_append()`);
});
afterAll(async () => {
  if (onPostgres) {
    await t?.app.db.sql.query('DROP TRIGGER IF EXISTS test_hold_append ON message');
    await t?.app.db.sql.query('DROP FUNCTION IF EXISTS test_hold_append()');
  }
  await t?.close();
});

const APPEND = `mutation($input: AppendMessageInput!) { appendMessage(input: $input) { id } }`;
const HISTORY = `query($id: ID!, $after: ID) { thread(id: $id) { messages(after: $after, first: 100) { id } } }`;

/** Backends (of this database) waiting for a lock, by what they wait for. */
const waiting = async (event: string) =>
  Number((await t.app.db.sql.query<{ n: string }>(
    `SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = $1`, [event],
  ))[0]!.n);

describe('thread message history under concurrent appends', () => {
  it.runIf(onPostgres)('a reader paging with after gets every message, also when two appends race', async () => {
    const owner = await t.token('history-reader', 'user');
    const threadId = (await t.gql(`mutation { createThread(input: { title: "race" }) { id } }`, {}, owner)).data.createThread.id as string;
    const append = (text: string) => t.gql(APPEND, { input: { threadId, role: 'USER', content: { text } } }, owner);
    const history = async (after?: string) =>
      ((await t.gql(HISTORY, { id: threadId, after }, owner)).data.thread.messages as { id: string }[]).map((message) => message.id);

    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const holding = t.app.db.sql.transaction(async (tx) => {
      await tx.query(`SELECT pg_advisory_xact_lock(${LOCK_KEY})`);
      await released;
    });
    try {
      await eventually(() => t.app.db.sql.query(`SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND objid = ${LOCK_KEY} AND granted`), (rows) => rows.length === 1);
      const first = append(HELD);
      await eventually(() => waiting('advisory'), (n) => n === 1);
      // The second append: it commits at once (the race), or waits for the first (no race).
      let secondDone = false;
      const second = append('second').then((answer) => ((secondDone = true), answer));
      await eventually(async () => secondDone || (await waiting('tuple')) + (await waiting('transactionid')) > 0, (settled) => settled);
      const seen = await history();
      release();
      await holding;
      const ids = [(await first).data.appendMessage.id, (await second).data.appendMessage.id];
      const rest = await history(seen.at(-1));
      expect([...seen, ...rest].sort()).toEqual([...ids].sort());
      // The only outcome the rule allows: the second waited for the first, so nothing was seen early.
      expect(seen).toEqual([]);
      expect(await history()).toEqual(ids);
    } finally {
      release();
      await holding.catch(() => {});
    }
  });
});
