import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/database.js';
import { readOwnerToolActivity } from '../../src/domain/tool-activity.js';
import { backendName } from '../support/database.js';
import { explainingSql, planTestDatabase, rowsTouched, type PlanNode } from '../support/plans.js';

// A view reads what runs now and what ended within its window, nothing else (issue 40): not the
// owner's older history, not another owner's ends, and none of the audits' own rows for the ends
// (their narrow copies in tool_audit_end, so payloads are never fetched). Counted from the plan's
// own row counts, on a table never analysed and then analysed.

const OLDER = 20_000;
const IN_WINDOW = 300;
const RUNNING = 20;
/** The tool names of owner-c's window, a fleet's: 4 ends each. */
const MANY_TOOLS = 300;
/** One in nine of the window's ends failed (see `audits`). */
const FAILED_IN_WINDOW = Math.floor(IN_WINDOW / 9);

describe(`a tool activity view's plan (${backendName})`, () => {
  let db: Database;
  let close = async () => {};

  beforeAll(async () => {
    ({ db, close } = await planTestDatabase());
    const audits = (owner: string, count: number, status: string, fromSeconds: number, toSeconds: number) => `
      INSERT INTO message (id, thread_id, run_id, role, message_type, operation_id, name, status, duration_ms, created_at, changed_at, output)
        SELECT gen_random_uuid(), r.thread_id, r.id, 'TOOL', 'tool_audit', '${status}-${fromSeconds}-' || i, 'tool-' || i % 5,
          (CASE WHEN '${status}' = 'ENDED' THEN CASE WHEN i % 9 = 0 THEN 'FAILED' ELSE 'COMPLETED' END ELSE 'RUNNING' END)::"AuditStatus",
          i % 3000, t - interval '1 second', t, '{"content": "an output the view never reads"}'
        FROM run r JOIN thread th ON th.id = r.thread_id AND th.owner_id = '${owner}', generate_series(1, ${count}) i,
          LATERAL (SELECT now() - make_interval(secs => ${fromSeconds} + (${toSeconds} - ${fromSeconds})::float8 * i / ${count})) AS at(t)`;
    await db.driver.exec(`
      INSERT INTO thread (id, owner_id, title) VALUES (gen_random_uuid(), 'owner-a', 'a'), (gen_random_uuid(), 'owner-b', 'b');
      INSERT INTO run (id, thread_id, status, lease_epoch) SELECT gen_random_uuid(), id, 'RUNNING', 1 FROM thread;
      ${audits('owner-a', OLDER, 'ENDED', 86_400 * 6, 7200)};
      ${audits('owner-a', IN_WINDOW, 'ENDED', 3000, 10)};
      ${audits('owner-a', RUNNING, 'RUNNING', 600, 10)};
      ${audits('owner-b', OLDER, 'ENDED', 3000, 10)};
      INSERT INTO thread (id, owner_id, title) VALUES (gen_random_uuid(), 'owner-c', 'c');
      INSERT INTO run (id, thread_id, status, lease_epoch) SELECT gen_random_uuid(), id, 'RUNNING', 1 FROM thread WHERE owner_id = 'owner-c';
      ${audits('owner-c', MANY_TOOLS * 4, 'ENDED', 3000, 10).replace("'tool-' || i % 5", `'tool-' || i % ${MANY_TOOLS}`)};`);
    for (const table of ['thread', 'run', 'message', 'tool_audit_end']) await db.driver.exec(`ALTER TABLE ${table} SET (autovacuum_enabled = false)`);
  }, 120_000);

  afterAll(() => close());

  const plans = () => {
    it('reads the window\'s ends and the running audits only: not older ends, not another owner\'s, no audit row for an end', async () => {
      let touched = new Map<string, number>();
      const sql = explainingSql(db, (plan) => (touched = rowsTouched(plan)));
      const view = await readOwnerToolActivity(sql, 'owner-a', { windowSeconds: 3600, name: null });
      expect(view.runningCount).toBe(RUNNING);
      expect(view.tools.reduce((ended, tool) => ended + tool.completed + tool.failed, 0)).toBe(IN_WINDOW);
      // The window's ends once (the counts), and the failures it lists: never the window again to
      // find them, which with rare failures meant reading all of it twice. The running audits, and
      // the listed ones by primary key.
      expect(touched.get('tool_audit_end')).toBeLessThanOrEqual(IN_WINDOW + FAILED_IN_WINDOW);
      expect(touched.get('message')).toBeLessThanOrEqual(RUNNING + 2 * 100);
    });

    it("does as much work for each tool whatever the number of tools: no tool's row compared with every other tool's", async () => {
      const plans: PlanNode[] = [];
      const view = await readOwnerToolActivity(explainingSql(db, (plan) => plans.push(plan)), 'owner-c', { windowSeconds: 3600, name: null });
      expect(view.tools).toHaveLength(MANY_TOOLS);
      // Rows a join compared and dropped, over all its loops: a join of the tools with their
      // percentiles by nested loop compared each of the 300 with each of the 300.
      const dropped = (node: PlanNode): number =>
        (node['Rows Removed by Join Filter'] ?? 0) * node['Actual Loops'] + (node.Plans ?? []).reduce((sum, child) => sum + dropped(child), 0);
      expect(plans.map(dropped)).toEqual([expect.any(Number)]);
      expect(dropped(plans[0]!)).toBeLessThanOrEqual(10 * MANY_TOOLS);
    });
  };

  describe('never analysed', plans);
  describe('analysed', () => {
    beforeAll(() => db.driver.exec('ANALYZE'), 120_000);
    plans();
  });
});
