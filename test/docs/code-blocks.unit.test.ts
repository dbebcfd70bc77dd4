// Docs are code: a block a page shows from a file of examples/ must be that file (or its region),
// so the page shows what the tests run; every runnable block of every page is such a file, an
// operation validated against the schema, or a shell command a named test lists and runs; no
// link leaves the repository.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { buildSchema, Kind, parse, validate } from 'graphql';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');
const PAGES = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`),
  'clients/python/README.md',
  'packages/client/README.md',
];
/**
 * The allow-list, marked in the page: a block tagged `text` or `json` is an output sample, a
 * diagram or a request's shape, never something to run.
 */
const SAMPLE = /^(text|json)$/;
const SHELL = /^(sh|bash)$/;

interface Block {
  page: string;
  line: number;
  lang: string;
  body: string;
  include?: string;
  /** `<!-- run by: test/… -->`: a shell block whose commands that test lists, as written, and runs. */
  runBy?: string;
  /** `<!-- checked by: test/… -->`: a block that test reads from the page and checks (settings, say). */
  checkedBy?: string;
}

/** A shell block's commands: its lines without their trailing comments. */
function commandsOf(block: Block): string[] {
  return block.body
    .split('\n')
    .map((line) => line.replace(/\s+#\s.*$/, '').trim())
    .filter(Boolean);
}

function blocksOf(page: string): Block[] {
  const lines = readFileSync(join(ROOT, page), 'utf8').split('\n');
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(\S*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const indent = open[1]!.length;
    let end = i + 1;
    while (end < lines.length && !/^\s*```\s*$/.test(lines[end]!)) end++;
    let previous = i - 1;
    while (previous >= 0 && lines[previous]!.trim() === '') previous--;
    const include = /<!-- include: (\S+) -->/.exec(lines[previous] ?? '')?.[1];
    const runBy = /<!-- run by: (\S+) -->/.exec(lines[previous] ?? '')?.[1];
    const checkedBy = /<!-- checked by: (\S+) -->/.exec(lines[previous] ?? '')?.[1];
    const body = lines.slice(i + 1, end).map((line) => line.slice(indent)).join('\n');
    blocks.push({ page, line: i + 1, lang: open[2]!, body, include, runBy, checkedBy });
    i = end;
  }
  return blocks;
}

/** A file of the repository, or the lines between `#region <name>` and `#endregion <name>` in it, dedented. */
function included(reference: string): string {
  const [file, region] = reference.split('#');
  const text = readFileSync(join(ROOT, file!), 'utf8');
  if (!region) return text.trimEnd();
  const lines = text.split('\n');
  const start = lines.findIndex((line) => line.includes(`#region ${region}`));
  const end = lines.findIndex((line) => line.includes(`#endregion ${region}`));
  expect(start, `${reference}: no #region ${region}`).toBeGreaterThanOrEqual(0);
  const body = lines.slice(start + 1, end);
  const indent = Math.min(...body.filter((line) => line.trim()).map((line) => /^ */.exec(line)![0].length));
  return body.map((line) => line.slice(indent)).join('\n').trimEnd();
}

describe('docs show the example files as they are', () => {
  const blocks = PAGES.flatMap(blocksOf);
  it.each(blocks.filter((block) => block.include).map((block) => [`${block.page}:${block.line} ${block.include}`, block] as const))('%s', (_name, block) => {
    expect(block.body.trimEnd()).toBe(included(block.include!));
  });

  it.each(PAGES)('every block of %s is an example file, an operation, a command a test runs, or a marked sample', (page) => {
    const loose = blocksOf(page).filter(
      (block) =>
        !block.include && !block.checkedBy && block.lang !== 'graphql' && !SAMPLE.test(block.lang) && !(SHELL.test(block.lang) && block.runBy),
    );
    expect(loose.map((block) => `${block.page}:${block.line} (${block.lang || 'untagged'})`)).toEqual([]);
  });

  const commands = PAGES.flatMap(blocksOf).filter((block) => block.runBy);
  it.each(commands.map((block) => [`${block.page}:${block.line} ${block.runBy}`, block] as const))('%s lists every command as written', (_name, block) => {
    const test = readFileSync(join(ROOT, block.runBy!), 'utf8');
    for (const command of commandsOf(block)) expect(test, `${block.runBy} does not list: ${command}`).toContain(command);
  });

  const checked = PAGES.flatMap(blocksOf).filter((block) => block.checkedBy);
  it.each(checked.map((block) => [`${block.page}:${block.line} ${block.checkedBy}`, block] as const))('%s reads the page', (_name, block) => {
    expect(readFileSync(join(ROOT, block.checkedBy!), 'utf8')).toContain(block.page);
  });
});

describe('docs stand alone', () => {
  it.each(PAGES)('every relative link of %s stays in the repository and exists', (page) => {
    const text = readFileSync(join(ROOT, page), 'utf8');
    // Code is not links: `TOOLS[name](**args)` in a Python block is a call.
    const prose = text.replace(/^(\s*)```[\s\S]*?^\1```/gm, '');
    const outside: string[] = [];
    for (const [, target] of prose.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:|^#/.test(target!)) continue;
      const path = resolve(ROOT, dirname(page), target!.split('#')[0]!);
      if (relative(ROOT, path).startsWith('..') || !existsSync(path)) outside.push(target!);
    }
    expect(outside).toEqual([]);
    expect(text).not.toMatch(/\.\.\/shared\//);
  });
});

/** A page's prose: its fenced blocks (indented ones too) left out. */
const withoutCode = (text: string) => text.replace(/^( *)```[\s\S]*?^\1```/gm, '');

/** GitHub's anchors of a page's headings (a repeated heading's get `-1`, `-2`, …), outside code blocks. */
function anchorsOf(page: string): Set<string> {
  const prose = withoutCode(readFileSync(join(ROOT, page), 'utf8'));
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const [, heading] of prose.matchAll(/^#{1,6} (.+)$/gm)) {
    const slug = heading!.replaceAll('`', '').trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, '').replaceAll(' ', '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count ? `${slug}-${count}` : slug);
  }
  return anchors;
}

describe('docs cite what exists', () => {
  it.each(PAGES)('every anchor %s links to is a heading of its page', (page) => {
    const prose = withoutCode(readFileSync(join(ROOT, page), 'utf8'));
    const broken: string[] = [];
    for (const [, target] of prose.matchAll(/\]\(([^)\s]*#[^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target!)) continue;
      const [file, anchor] = target!.split('#');
      const linked = file ? relative(ROOT, resolve(ROOT, dirname(page), file)) : page;
      if (linked.endsWith('.md') && existsSync(join(ROOT, linked)) && !anchorsOf(linked).has(anchor!)) broken.push(target!);
    }
    expect(broken).toEqual([]);
  });

  it.each(PAGES)('every test, example or script file %s names exists', (page) => {
    const text = readFileSync(join(ROOT, page), 'utf8');
    const named = [...text.matchAll(/\b((?:test|examples|scripts|bench)\/[\w./-]*\.[a-z]+)\b/g)].map((match) => match[1]!);
    // A client's README names its own files from its own directory.
    expect(named.filter((file) => !existsSync(join(ROOT, file)) && !existsSync(join(ROOT, dirname(page), file)))).toEqual([]);
  });
});

describe("the pages and the schema's descriptions cite sections of docs/semantics.md that exist", () => {
  const headings = [...readFileSync(join(ROOT, 'docs/semantics.md'), 'utf8').matchAll(/^## (.+)$/gm)].map((match) => match[1]!);
  /** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
  const slug = (heading: string) => heading.toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, '').replaceAll(' ', '-');
  // "Dashboards" names "## Dashboards (tool activity)": a heading's words before its parenthesis.
  const names = new Set(headings.flatMap((heading) => [heading, heading.replace(/ \(.*\)$/, '')]));

  it.each([...PAGES, 'schema.graphql'])('%s', (page) => {
    const text = readFileSync(join(ROOT, page), 'utf8');
    // SEMANTICS.md is the contract's file, which is not in this repository.
    expect(text).not.toMatch(/SEMANTICS\.md/);
    const cited = [...text.matchAll(/semantics\.md\)?,? "([^"]+)"/g)].map((match) => match[1]!);
    expect(cited.filter((name) => !names.has(name))).toEqual([]);
    const anchors = [...text.matchAll(/semantics\.md#([\w-]+)/g)].map((match) => match[1]!);
    expect(anchors.filter((anchor) => !headings.some((heading) => slug(heading) === anchor))).toEqual([]);
  });
});

describe('example documents validate against the schema', () => {
  const schema = buildSchema(readFileSync(join(ROOT, 'schema.graphql'), 'utf8'));
  // The README's operations, pasted into GraphiQL with their "<…>" placeholders filled in.
  it.each(PAGES.flatMap(blocksOf).filter((block) => block.lang === 'graphql' && !block.include).map((block) => [`${block.page}:${block.line}`, block] as const))(
    '%s',
    (_name, block) => {
      // Each operation is pasted on its own.
      const { definitions } = parse(block.body.replace(/"<[^>"]+>"/g, '"an-id"'));
      for (const definition of definitions) expect(validate(schema, { kind: Kind.DOCUMENT, definitions: [definition] })).toEqual([]);
    },
  );
  const files = readdirSync(join(ROOT, 'examples'), { recursive: true }).map(String).filter((name) => name.endsWith('.graphql'));
  it.each(files)('examples/%s', (file) => {
    expect(validate(schema, parse(readFileSync(join(ROOT, 'examples', file), 'utf8')))).toEqual([]);
  });
});
