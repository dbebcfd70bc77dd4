import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUDIT_SEARCH_TEXT, SEARCH_WALK_BUDGET } from '../../src/domain/audit-search.js';
import { backendName } from '../support/database.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { actors, createRun, createThread, type Actors } from '../support/lifecycle.js';

// searchAudits walks the newest audits first and falls back to the trigram index when its walk
// budget runs out (src/domain/audit-search.ts). Whichever path a search takes, its pages must be
// the plain scan's answer: the same hits, newest first, each once. Threads larger than the walk
// budget, with texts of every frequency, make each search take its path.

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const SEARCH = `query($text: String, $name: String, $status: AuditStatus, $kind: AuditKind, $threadId: ID, $first: Int, $after: ID) {
  searchAudits(text: $text, name: $name, status: $status, kind: $kind, threadId: $threadId, first: $first, after: $after) {
    hasMore
    items { audit { id } }
  }
}`;

interface Criteria {
  text?: string;
  name?: string;
  status?: 'COMPLETED' | 'FAILED' | 'RUNNING';
  kind?: 'MODEL' | 'TOOL';
  threadId?: string;
}

/** Every page of a search, `first` at a time, as the client pages: `after` the last hit. */
async function allPages(token: string, criteria: Criteria, first: number): Promise<string[]> {
  const ids: string[] = [];
  let after: string | null = null;
  for (;;) {
    const response = await t.gql(SEARCH, { ...criteria, first, after }, token);
    expect(response.errors, JSON.stringify(criteria)).toBeUndefined();
    const page = response.data.searchAudits as { hasMore: boolean; items: { audit: { id: string } }[] };
    ids.push(...page.items.map((hit) => hit.audit.id));
    if (!page.hasMore) return ids;
    expect(page.items, JSON.stringify(criteria)).toHaveLength(first);
    after = page.items.at(-1)!.audit.id;
  }
}

/** Audits of a thread, `count` of them, whose texts repeat with period `i`; one in three a model call. */
async function seedAudits(threadId: string, runId: string, count: number, offset: number) {
  await t.app.db.driver.exec(`
    INSERT INTO message (id, thread_id, run_id, role, message_type, operation_id, name, sequence, status, input, output, error)
      SELECT gen_random_uuid(), '${threadId}', '${runId}',
        (CASE WHEN i % 3 = 0 THEN 'ASSISTANT' ELSE 'TOOL' END)::"MessageRole", (CASE WHEN i % 3 = 0 THEN 'model_audit' ELSE 'tool_audit' END)::"MessageType", 'op-' || i, CASE WHEN i % 500 = 3 THEN 'tool-rare' WHEN i % 2 = 0 THEN 'tool-even' ELSE 'tool-odd' END, i,
        (CASE WHEN i % 97 = 0 THEN 'FAILED' WHEN i % 89 = 0 THEN 'RUNNING' ELSE 'COMPLETED' END)::"AuditStatus",
        jsonb_build_object('prompt', 'common words about alpha and gamma ' || i, 'tag', CASE WHEN i % 40 = 0 THEN 'medium-tag' END),
        CASE WHEN i % 89 = 0 THEN NULL ELSE jsonb_build_object('content', CASE WHEN i % 700 = 11 THEN 'gamma alpha swapped' ELSE 'alpha then gamma' END) END,
        CASE WHEN i % 97 = 0 THEN jsonb_build_object('message', CASE WHEN i IN (970, 5820) THEN 'needle-rare failure' ELSE 'card declined' END) END
      FROM generate_series(${offset}, ${offset + count - 1}) i;
    ANALYZE message;`);
}

describe(`searchAudits pages against a plain scan (${backendName})`, () => {
  let who: Actors;
  let large: string;
  let small: string;
  let scanned: { id: string; threadId: string; name: string | null; status: string; kind: string; text: string }[];

  beforeAll(async () => {
    who = await actors(t);
    large = await createThread(t, who.owner, 'larger than the walk budget');
    small = await createThread(t, who.owner, 'smaller');
    const stranger = await actors(t);
    const theirs = await createThread(t, stranger.owner, "another superadmin's");
    await seedAudits(large, await createRun(t, who.owner, large), SEARCH_WALK_BUDGET + 600, 0);
    await seedAudits(small, await createRun(t, who.owner, small), 1400, 5000);
    await seedAudits(theirs, await createRun(t, stranger.owner, theirs), 300, 0);
    // The plain scan: every audit the owner may read, with the text a search matches against.
    scanned = await t.app.db.driver.query(
      `SELECT m.id, m.thread_id AS "threadId", m.name, m.status, CASE m.message_type WHEN 'model_audit' THEN 'MODEL' ELSE 'TOOL' END AS kind,
         ${AUDIT_SEARCH_TEXT} AS text
       FROM message m JOIN thread t ON t.id = m.thread_id
       WHERE t.owner_id = $1 AND m.message_type IN ('model_audit', 'tool_audit') ORDER BY m.id DESC`,
      [who.ownerSub],
    );
  }, 120_000);

  const expected = (criteria: Criteria) =>
    scanned
      .filter(
        (audit) =>
          (criteria.text === undefined || audit.text.toLowerCase().includes(criteria.text.toLowerCase())) &&
          (criteria.name === undefined || audit.name === criteria.name) &&
          (criteria.status === undefined || audit.status === criteria.status) &&
          (criteria.kind === undefined || audit.kind === criteria.kind) &&
          (criteria.threadId === undefined || audit.threadId === criteria.threadId),
      )
      .map((audit) => audit.id);

  const kinds: [string, () => Criteria, number][] = [
    ['a common text (in every audit)', () => ({ text: 'COMMON words' }), 100],
    ['a text of medium frequency (1 in 40)', () => ({ text: 'medium-tag' }), 50],
    ['a rare text', () => ({ text: 'needle-rare' }), 50],
    ['a text whose trigrams are common but whole is rare', () => ({ text: 'gamma alpha' }), 3],
    ['a text no audit holds', () => ({ text: 'nothing like this' }), 50],
    ['a common name', () => ({ name: 'tool-even' }), 100],
    ['a rare name', () => ({ name: 'tool-rare' }), 2],
    ['a status alone', () => ({ status: 'FAILED' }), 10],
    ['a common text and a rare status', () => ({ text: 'alpha', status: 'RUNNING' }), 10],
    ['a common text and a name', () => ({ text: 'words', name: 'tool-odd' }), 100],
    ['a medium text within the larger thread', () => ({ text: 'medium-tag', threadId: large }), 7],
    ['a rare text within the larger thread', () => ({ text: 'swapped', threadId: large }), 1],
    ['a common text within the smaller thread', () => ({ text: 'then gamma', threadId: small }), 100],
    ['everything', () => ({}), 100],
    ['tool executions alone', () => ({ kind: 'TOOL' }), 100],
    ['model calls alone', () => ({ kind: 'MODEL' }), 100],
    ['failed tool executions', () => ({ kind: 'TOOL', status: 'FAILED' }), 5],
    ['model calls of a name', () => ({ kind: 'MODEL', name: 'tool-rare' }), 2],
    ['a common text in tool executions', () => ({ text: 'COMMON words', kind: 'TOOL' }), 100],
    ['a rare text in model calls', () => ({ text: 'needle-rare', kind: 'MODEL' }), 50],
    ['a rare text in tool executions', () => ({ text: 'needle-rare', kind: 'TOOL' }), 50],
    ['a medium text in model calls of the larger thread', () => ({ text: 'medium-tag', kind: 'MODEL', threadId: large }), 3],
    ['a text whose trigrams are common in tool executions', () => ({ text: 'gamma alpha', kind: 'TOOL', status: 'COMPLETED' }), 2],
  ];

  for (const [kind, criteria, first] of kinds) {
    it(`finds ${kind}: the scan's hits, newest first, each once across pages`, { timeout: 120_000 }, async () => {
      const want = expected(criteria());
      expect(want.length, 'the seeded data holds this kind').toBeGreaterThan(kind === 'a text no audit holds' ? -1 : 0);
      expect(await allPages(who.owner, criteria(), first)).toEqual(want);
    });
  }
});
