// A database whose disk is full refuses every write with SQLSTATE 53100 ("could not extend file
// …: No space left on device", measured on PostgreSQL 15 with its tablespace on a full 60 MB
// tmpfs). That is an outage the client retries, not a bug: 503 UNAVAILABLE with Retry-After and
// a message saying so, logged at warn, nothing written; the same request succeeds once space is
// back. Here the database raises the same SQLSTATE from a trigger, on PGlite and PostgreSQL.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onLogLine } from '../../src/log.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { backendName } from '../support/database.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t?.close());

describe(`a full disk (${backendName})`, () => {
  it('answers 503 UNAVAILABLE saying the disk is full, writes nothing, and takes the same write once space is back', async () => {
    const owner = await t.token('disk-full-owner', 'user');
    const threadId = ((await t.gql('mutation { createThread(input: { title: "disk" }) { id } }', {}, owner)).data as { createThread: { id: string } }).createThread.id;
    const append = async () => {
      const response = await t.app.yoga.fetch('http://test/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${owner}` },
        body: JSON.stringify({
          query: 'mutation($input: AppendMessageInput!) { appendMessage(input: $input) { id } }',
          variables: { input: { threadId, role: 'USER', content: { text: 'a large tool output' } } },
        }),
      });
      const body = (await response.json()) as { errors?: { message: string; extensions?: { code?: string } }[] };
      return { status: response.status, retryAfter: response.headers.get('retry-after'), errors: body.errors };
    };
    const messages = async () =>
      (await t.app.db.sql.query<{ n: number }>('SELECT count(*)::int AS n FROM message WHERE thread_id = $1::uuid', [threadId]))[0]!.n;

    await t.app.db.sql.query(`CREATE FUNCTION disk_is_full() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'could not extend file "base/1/2": No space left on device' USING ERRCODE = '53100'; END $$`);
    await t.app.db.sql.query('CREATE TRIGGER disk_is_full BEFORE INSERT ON message FOR EACH ROW EXECUTE FUNCTION disk_is_full()');
    const lines: { level: number | string; msg: string; error?: { code?: string } }[] = [];
    const stopListening = onLogLine((line) => lines.push(JSON.parse(line) as (typeof lines)[number]));
    try {
      const refused = await append();
      expect(refused.errors?.[0]?.extensions?.code, JSON.stringify(refused.errors)).toBe('UNAVAILABLE');
      expect(refused.status).toBe(503);
      expect(Number(refused.retryAfter)).toBeGreaterThan(0);
      expect(refused.errors?.[0]?.message).toMatch(/disk/i);
      expect(await messages()).toBe(0);
      expect(lines.filter((line) => line.msg === 'unexpected error')).toEqual([]);
      expect(lines.filter((line) => line.msg === 'database unavailable').map((line) => line.error?.code)).toContain('53100');
    } finally {
      stopListening();
      await t.app.db.sql.query('DROP TRIGGER disk_is_full ON message');
      await t.app.db.sql.query('DROP FUNCTION disk_is_full()');
    }
    const accepted = await append();
    expect(accepted.errors).toBeUndefined();
    expect(await messages()).toBe(1);
  });
});
