import { describe, expect, it } from 'vitest';
import { payloadText, revealInvisible, snippetOf, withInvisibleMarked } from '../../web/src/timeline.js';

// A payload as the details panel shows it: indented JSON, text read as its lines.

describe('a payload in the details panel', () => {
  it("shows a string's line breaks as lines, and every other escape as JSON writes it", () => {
    expect(payloadText({ content: 'GET /a 200\nGET /b 500', status: 'success' })).toBe('{\n  "content": "GET /a 200\nGET /b 500",\n  "status": "success"\n}');
    expect(payloadText({ log: 'one\r\ntwo' })).toBe('{\n  "log": "one\ntwo"\n}');
    // A backslash then "n" is not a line break; a quote stays escaped.
    expect(payloadText({ path: 'C:\\new', said: 'a "b"' })).toBe('{\n  "path": "C:\\\\new",\n  "said": "a \\"b\\""\n}');
  });

  it('shows a string payload as its text', () => {
    expect(payloadText('timed out\nafter 3 tries')).toBe('timed out\nafter 3 tries');
  });

  it('shows a string holding a JSON object or array as that JSON, indented, wherever it is; other strings as they are', () => {
    expect(payloadText('{"a":[1]}')).toBe('{\n  "a": [\n    1\n  ]\n}');
    expect(payloadText({ content: '[{"sku":"S-1","note":"x\\ny"}]' })).toBe('{\n  "content": [\n    {\n      "sku": "S-1",\n      "note": "x\ny"\n    }\n  ]\n}');
    expect(payloadText({ content: '{not json' })).toBe('{\n  "content": "{not json"\n}');
    // Parsing would round a number this long: the text stays as it was.
    expect(payloadText({ content: '{"id": 12345678901234567890}' })).toBe('{\n  "content": "{\\"id\\": 12345678901234567890}"\n}');
    // Nor would it show what was written: a number out of range (null), a negative zero (0).
    expect(payloadText('{"limit": 1e400}')).toBe('{"limit": 1e400}');
    expect(payloadText({ content: '[-0]' })).toBe('{\n  "content": "[-0]"\n}');
    expect(payloadText('{"p": 0.1000000000000000055511151231257827}')).toBe('{"p": 0.1000000000000000055511151231257827}');
    // A number written another way but meaning the same is shown as JSON writes it.
    expect(payloadText('{"t": 21.0, "n": 1E2, "s": "1e400"}')).toBe('{\n  "t": 21,\n  "n": 100,\n  "s": "1e400"\n}');
  });
});

describe('revealInvisible', () => {
  it('cuts out each bidi control and invisible character as its mark, and leaves other text whole', () => {
    expect(revealInvisible('say \u202Eevil\u202C, a\u200Bb')).toEqual([
      { text: 'say ', mark: false }, { text: '⟨U+202E⟩', mark: true }, { text: 'evil', mark: false }, { text: '⟨U+202C⟩', mark: true },
      { text: ', a', mark: false }, { text: '⟨U+200B⟩', mark: true }, { text: 'b', mark: false },
    ]);
    expect(revealInvisible('مرحبا שלום')).toEqual([{ text: 'مرحبا שלום', mark: false }]);
  });

  it('marks every character that draws nothing, astral ones too: tag characters (hidden "ASCII smuggling" text), fillers, joiners', () => {
    // "say hi" followed by the tag characters for "IGNORE": drawn as "say hi" alone.
    const smuggled = `say hi${[...'IGNORE'].map((c) => String.fromCodePoint(0xe0000 + c.charCodeAt(0))).join('')}`;
    expect(revealInvisible(smuggled).map((piece) => piece.text).join('')).toBe('say hi⟨U+E0049⟩⟨U+E0047⟩⟨U+E004E⟩⟨U+E004F⟩⟨U+E0052⟩⟨U+E0045⟩');
    expect(revealInvisible('a\u034Fb\u3164c\u{E0100}')).toEqual([
      { text: 'a', mark: false }, { text: '⟨U+034F⟩', mark: true }, { text: 'b', mark: false }, { text: '⟨U+3164⟩', mark: true },
      { text: 'c', mark: false }, { text: '⟨U+E0100⟩', mark: true },
    ]);
    expect(withInvisibleMarked({ q: 'x\u{E0041}' })).toEqual({ q: 'x⟨U+E0041⟩' });
    // An emoji's presentation selector is part of how it is drawn, not hidden text.
    expect(revealInvisible('sunny ☀️ ✔️')).toEqual([{ text: 'sunny ☀️ ✔️', mark: false }]);
  });
});

describe('a search hit without a server snippet', () => {
  it('cuts its text between characters, never inside one (an emoji is two UTF-16 units)', () => {
    const error = JSON.stringify({ message: `a${'😀'.repeat(80)}` });
    const shown = snippetOf(error, '');
    expect(shown).toBe(`${[...error].slice(0, 60).join('')}…`);
    expect(shown).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/);
    expect(snippetOf(`${'😀'.repeat(30)}needle`, 'NEEDLE')).toBe(`…${'😀'.repeat(25)}needle`);
  });

  it('cuts between characters as a reader sees them: never inside an emoji sequence or a flag', () => {
    const family = '👨‍👩‍👧'; // five code points
    expect(snippetOf(`${family.repeat(6)}needle${family.repeat(20)}`, 'needle')).toBe(`…${family.repeat(5)}needle${family.repeat(5)}…`);
    expect(snippetOf(`x${'🇯🇵'.repeat(40)}`, '')).toBe(`x${'🇯🇵'.repeat(29)}…`);
  });
});
