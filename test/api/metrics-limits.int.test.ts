import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { backendName } from '../support/database.js';
import { runningRun } from '../support/lifecycle.js';
import { parsePrometheusText } from '../support/prometheus-text.js';
import { subscribeOn, subscribeSse, waitFor, wsClient } from '../support/streams.js';

/* A subscription refused by a cap (README "Security model") shows in /metrics, on either transport. */

const THREAD_CHANGES = `subscription($threadId: ID!) { threadChanges(threadId: $threadId) { cursor } }`;
const REFUSED = 'agent_audit_failed_operations_total{operation="subscription",code="BAD_USER_INPUT"}';

describe(`subscriptions refused by WS_MAX_SUBSCRIPTIONS_PER_PRINCIPAL in /metrics (${backendName})`, () => {
  let t: TestApp;
  let url: string;
  beforeAll(async () => {
    t = await startTestApp({ WS_MAX_SUBSCRIPTIONS_PER_PRINCIPAL: '1' });
    url = await t.app.start(0, '127.0.0.1');
  });
  afterAll(async () => t?.close());
  const refused = async () => parsePrometheusText(await (await fetch(url.replace('/graphql', '/metrics'))).text()).samples.get(REFUSED) ?? 0;

  it('counts a refusal over SSE and over graphql-ws alike', async () => {
    const { threadId, owner } = await runningRun(t);
    const client = wsClient(url, owner);
    const open = subscribeOn(client, THREAD_CHANGES, { threadId });
    try {
      await waitFor(() => t.app.pubsub.subscriberCount('changes', threadId) === 1, 'the first subscription');
      const before = await refused();
      const overWs = subscribeOn(client, THREAD_CHANGES, { threadId });
      expect((await overWs.ended()).kind).toBe('error');
      const overSse = await subscribeSse(url, THREAD_CHANGES, { threadId }, owner);
      await overSse.until((results) => results.some((result) => result.errors?.length), 'the refusal');
      await overSse.close();
      expect((await refused()) - before).toBe(2);
    } finally {
      await open.close();
      await client.dispose();
    }
  });
});
