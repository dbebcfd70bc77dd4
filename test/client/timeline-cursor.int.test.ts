// A dashboard built on the TypeScript client reads a thread's timeline, then follows it live with
// threadChanges(after:) from the cursor that read returned (SEMANTICS, "Change cursors").
import { afterAll, beforeAll, expect, it } from 'vitest';
import { AuditClient } from '@agent-audit/client';
import { startTestApp, type TestApp } from '../support/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

it("threadAudits gives the read's cursor, where threadChanges(after:) continues it", async () => {
  const token = await t.token('cursor-owner', 'superadmin');
  const owner = new AuditClient({ url: 'http://test/graphql', token, fetch: (url, init) => Promise.resolve(t.app.yoga.fetch(url, init)) });
  const { id: threadId } = await owner.createThread({ title: 'followed live' });
  await owner.createRun({ threadId });
  const timeline = await owner.threadAudits(threadId);
  const { data } = await t.gql('query($id: ID!) { thread(id: $id) { changeCursor } }', { id: threadId }, token);
  expect(timeline.cursor).toBe(data.thread.changeCursor);
});
