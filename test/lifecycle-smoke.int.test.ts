import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.js';
import { THREAD_AUDITS, clockAt, must, runningRun } from './support/lifecycle.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

describe('a run end to end', () => {
  it('records model -> tool -> model and converges', async () => {
    const { session, owner, threadId } = await runningRun(t);
    must(await session.modelStarted('m1', { clock: clockAt(0), model: 'gpt' }));
    const model = must(await session.modelFinished('m1', [{ id: 'call-1', name: 'search', args: { q: 'x' } }], { clock: clockAt(5) }));
    expect(model.toolCalls).toMatchObject([{ toolCallId: 'call-1', status: 'PENDING' }]);
    const started = must(await session.toolStarted('call-1', 'search', { effectiveInput: { q: 'y' }, clock: clockAt(10) }));
    expect(started.toolCall.status).toBe('RUNNING');
    const finished = must(
      await session.toolFinished('call-1', { content: 'found', status: 'success', id: 'msg-1', artifact: { raw: 1 } }, { clock: clockAt(25) }),
    );
    expect(finished).toMatchObject({ status: 'COMPLETED', durationMs: 15, toolCall: { status: 'COMPLETED', output: 'found' } });
    must(await session.modelStarted('m2'));
    must(await session.modelFinished('m2'));
    const run = must(await session.finish('COMPLETED'));
    expect(run.status).toBe('COMPLETED');
    const audits = await t.gql(THREAD_AUDITS, { threadId }, owner);
    expect(audits.errors).toBeUndefined();
    expect(audits.data.threadAudits.items.map((item: any) => `${item.__typename}:${item.operationId}`)).toEqual([
      'ModelAudit:m1',
      'ToolAudit:call-1',
      'ModelAudit:m2',
    ]);
  });
});
