import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backendName } from '../support/database.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { actors, claim, createRun, createThread, must, type Actors } from '../support/lifecycle.js';

// searchAudits for text in scripts whose words carry combining vowel marks (Hebrew niqqud, Arabic
// harakat, Thai vowels): the trigram index takes such a word whole, so a search for it is taken.

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const SEARCH = `query($text: String) { searchAudits(text: $text, first: 5) { items { snippet audit { id } } } }`;

describe(`searchAudits in scripts with vowel marks (${backendName})`, () => {
  let who: Actors;
  let toolId: string;
  const output = { content: 'שָׁלוֹם עֲלֵיכֶם · مُحَمَّدٌ رَسُولٌ · สวัสดีครับ', status: 'success' };

  beforeAll(async () => {
    who = await actors(t);
    const threadId = await createThread(t, who.owner, 'שיחה');
    const worker = await claim(t, who.worker, await createRun(t, who.owner, threadId));
    must(await worker.modelStarted('plan', { model: 'planner-7', input: { messages: [] } }));
    must(await worker.modelFinished('plan', [{ id: 'greet', name: 'greet', args: {} }]));
    toolId = must(await worker.toolStarted('greet', 'greet', { effectiveInput: {} })).id as string;
    must(await worker.toolFinished('greet', output));
  }, 60_000);

  it('finds vocalized Hebrew, Arabic and Thai words, with the word in the snippet', async () => {
    for (const text of ['שָׁלוֹם', 'مُحَمَّدٌ', 'สวัสดี']) {
      const response = await t.gql(SEARCH, { text }, who.owner);
      expect(response.errors, text).toBeUndefined();
      const items = response.data.searchAudits.items as { snippet: string; audit: { id: string } }[];
      expect(items.map((hit) => hit.audit.id), text).toEqual([toolId]);
      expect(items[0]!.snippet).toContain(text);
    }
  });
});
