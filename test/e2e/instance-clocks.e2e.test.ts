import { describe, expect, it } from 'vitest';
import { AuditClient } from '@agent-audit/client';
import { postgresSuiteRuns } from '../support/database.js';
import { e2eActors, startServer, storageForFile } from './support/server.js';

// A new row's id is a UUIDv7, and lists read newest first by id (the tool call ledger, audit
// search). Two instances on one database whose clocks differ by 10 minutes: a call declared
// through the one behind was listed below calls declared minutes before it, through the other.
// Instances sharing a database need PostgreSQL (PGlite is one process's).

const runs = postgresSuiteRuns('the instance clocks suite', 'two instances share one database');
const storage = storageForFile({ runs, postgresOnly: true });

/** The process's Date.now() 10 minutes behind: an instance whose clock is off. */
const CLOCK_BEHIND = `--import=data:text/javascript,${encodeURIComponent('const now = Date.now; Date.now = () => now() - 600000;')}`;

describe.runIf(runs)('instances whose clocks differ, on one PostgreSQL database', () => {
  it('the ledger lists a call declared through the instance 10 minutes behind above the calls declared before it', async () => {
    const [onTime, behind] = await Promise.all([startServer(storage()), startServer(storage(), { NODE_OPTIONS: CLOCK_BEHIND })]);
    const who = await e2eActors();
    const owner = new AuditClient({ url: onTime.url, token: who.owner });
    const { id: threadId } = await owner.createThread({ title: 'clocks' });
    const run = await owner.createRun({ threadId });
    const lease = await new AuditClient({ url: onTime.url, token: who.worker }).claimRun(run.id, 600);
    let sequence = 1;
    for (const [server, id] of [[onTime, 'older'], [behind, 'newer']] as const) {
      const worker = new AuditClient({ url: server.url, token: who.worker });
      await worker.recordModelStarted({ lease, operationId: `plan-${id}`, sequence: sequence++, model: 'gpt-x' });
      await worker.recordModelFinished({ lease, operationId: `plan-${id}`, status: 'COMPLETED', sequence: sequence++, toolCalls: [{ id, name: 'fetch', args: {} }] });
    }

    const response = await fetch(onTime.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${who.owner}` },
      body: JSON.stringify({ query: 'query($t: ID) { toolCallLedger(threadId: $t) { edges { node { toolCallId } } } }', variables: { t: threadId } }),
    });
    const { data, errors } = (await response.json()) as { data: { toolCallLedger: { edges: { node: { toolCallId: string } }[] } }; errors?: unknown };
    expect(errors).toBeUndefined();
    expect(data.toolCallLedger.edges.map((edge) => edge.node.toolCallId)).toEqual(['newer', 'older']);
  }, 180_000);
});
