import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backendName } from '../support/database.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { actors, claim, createRun, createThread, must, type Actors } from '../support/lifecycle.js';

// searchAudits for text in scripts whose words carry combining vowel marks (Hebrew niqqud, Arabic
// harakat, Thai vowels): the trigram index takes such a word whole, so a search for it is taken.
// Snippets cut between characters as a reader sees them (grapheme clusters): an emoji family
// (man ZWJ woman ZWJ girl), a flag (two regional indicators), a letter with its vowel marks.

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

  it('cuts a snippet between whole characters: never inside an emoji sequence, a flag or a vowel-marked letter', async () => {
    const family = '👨‍👩‍👧';
    const segmenter = new Intl.Segmenter(undefined, { granularity: 'grapheme' });
    const graphemes = (text: string) => [...segmenter.segment(text)].map((piece) => piece.segment);
    // Each layout puts the snippet's ends at another offset inside the sequences around the match.
    const layouts: string[] = [];
    for (let pad = 0; pad < 6; pad++) {
      layouts.push(`${'x'.repeat(pad)}${family.repeat(8)}_大阪府天候_${family.repeat(12)}`);
      layouts.push(`${'x'.repeat(pad)}${'🇯🇵'.repeat(3)}${'שָׁ'.repeat(8)}_大阪府天候_${'שָׁ'.repeat(12)}${'🇯🇵'.repeat(6)}`);
    }
    const threadId = await createThread(t, who.owner, 'snippets');
    const worker = await claim(t, who.worker, await createRun(t, who.owner, threadId));
    must(await worker.modelStarted('plan', { model: 'planner-7', input: { messages: [] } }));
    must(await worker.modelFinished('plan', layouts.map((_, index) => ({ id: `c${index}`, name: 'weather', args: {} }))));
    for (const [index, content] of layouts.entries()) {
      must(await worker.toolStarted(`c${index}`, 'weather', { effectiveInput: {} }));
      must(await worker.toolFinished(`c${index}`, { content, status: 'success' }));
    }
    const response = await t.gql(`query($threadId: ID) { searchAudits(text: "大阪府天候", threadId: $threadId, first: 20) { items { snippet } } }`, { threadId }, who.owner);
    expect(response.errors).toBeUndefined();
    const snippets = (response.data.searchAudits.items as { snippet: string }[]).map((hit) => hit.snippet);
    expect(snippets).toHaveLength(layouts.length);
    for (const snippet of snippets) {
      expect(snippet).toMatch(/^….*_大阪府天候_.*…$/u);
      expect([...snippet.slice(1, -1)].length).toBeLessThanOrEqual(60);
      // Every grapheme of the snippet, ellipses aside, is a whole one of the stored text.
      for (const piece of graphemes(snippet.slice(1, -1))) {
        expect(['x', '"', ':', ' ', ',', '{', '}', 's', 't', 'a', 'u', 'c', 'e', 'o', 'n', '_', '大', '阪', '府', '天', '候', family, '🇯🇵', 'שָׁ'], snippet).toContain(piece);
      }
    }
  });
});
