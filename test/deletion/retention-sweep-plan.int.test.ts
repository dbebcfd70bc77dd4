import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/database.js';
import type { DomainDeps } from '../../src/domain/command.js';
import { sweepRetention } from '../../src/domain/deletion.js';
import { backendName } from '../support/database.js';
import { explainingSql, planTestDatabase, rowsTouched, type PlanNode } from '../support/plans.js';

// RETENTION_DAYS over a history of old threads still in use (created months ago, written to
// today: none due). A sweep that asked every such thread for its latest change in one statement
// took a second per thousand of them, cold: at a few tens of thousands it passed the statement
// timeout on every try, and retention never deleted anything again. Each statement of a sweep
// looks at a bounded page of threads, whatever their number; counted from the plans' own rows.

const OLD_IN_USE = 450;
const PAGE = 100;

let db: Database;
let close: () => Promise<void>;
beforeAll(async () => {
  ({ db, close } = await planTestDatabase());
  await db.sql.query(`INSERT INTO thread (id, owner_id, created_at)
    SELECT gen_random_uuid(), 'owner', now() - interval '90 days' - make_interval(secs => i) FROM generate_series(1, ${OLD_IN_USE}) i`);
  await db.sql.query(`INSERT INTO message (id, thread_id, role) SELECT gen_random_uuid(), id, 'USER' FROM thread`);
  // The one thread due: old, and nothing written since.
  await db.sql.query(`INSERT INTO thread (id, owner_id, created_at) VALUES ('00000000-0000-4000-8000-00000000d0e0', 'owner', now() - interval '60 days')`);
  await db.sql.query('ANALYZE');
}, 120_000);
afterAll(() => close?.());

describe(`a retention sweep over many old threads still in use (${backendName})`, () => {
  it('looks at a bounded page of threads per statement, and still finds the one due', async () => {
    const plans: PlanNode[] = [];
    const deps: DomainDeps = {
      db: explainingSql(db, (plan) => plans.push(plan)),
      publish: () => {},
      limits: { leaseMinSeconds: 1, leaseMaxSeconds: 60, maxJsonBytes: 1000 },
      databaseId: 'test',
    };
    const receipts: string[] = [];
    const deleted = await sweepRetention(deps, {
      olderThan: new Date(Date.now() - 30 * 86_400_000),
      batchThreads: PAGE,
      onReceipt: (receipt) => receipts.push(receipt.threadId),
    });
    expect(deleted).toBe(1);
    expect(receipts).toEqual(['00000000-0000-4000-8000-00000000d0e0']);
    const messagesPerStatement = plans.map((plan) => rowsTouched(plan).get('message') ?? 0);
    // Each thread looked at costs a probe or two of its messages; all 450 in one statement before.
    expect(Math.max(...messagesPerStatement)).toBeLessThanOrEqual(2 * PAGE + 2);
  });
});
