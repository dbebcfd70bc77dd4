// Docs are code: a block a page shows from a file of examples/ must be that file (or its region),
// so the page shows what the tests run; a guide's runnable blocks all come from such files; no
// link leaves the repository; every example document validates against the schema.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { buildSchema, Kind, parse, validate } from 'graphql';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');
const PAGES = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)];
/** Guides whose every runnable block must be an example file (the others also hold output and diagrams). */
const STRICT = ['docs/debug-ui.md', 'docs/subscriptions.md'];
const RUNNABLE = /^(sh|bash|ts|typescript|js|javascript|graphql|python|py)$/;

interface Block {
  page: string;
  line: number;
  lang: string;
  body: string;
  include?: string;
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
    blocks.push({ page, line: i + 1, lang: open[2]!, body: lines.slice(i + 1, end).map((line) => line.slice(indent)).join('\n'), include });
    i = end;
  }
  return blocks;
}

/** A file of the repository, or the lines between `#region <name>` and `#endregion <name>` in it. */
function included(reference: string): string {
  const [file, region] = reference.split('#');
  const text = readFileSync(join(ROOT, file!), 'utf8');
  if (!region) return text.trimEnd();
  const lines = text.split('\n');
  const start = lines.findIndex((line) => line.includes(`#region ${region}`));
  const end = lines.findIndex((line) => line.includes(`#endregion ${region}`));
  expect(start, `${reference}: no #region ${region}`).toBeGreaterThanOrEqual(0);
  return lines.slice(start + 1, end).join('\n').trimEnd();
}

describe('docs show the example files as they are', () => {
  const blocks = PAGES.flatMap(blocksOf);
  it.each(blocks.filter((block) => block.include).map((block) => [`${block.page}:${block.line} ${block.include}`, block] as const))('%s', (_name, block) => {
    expect(block.body.trimEnd()).toBe(included(block.include!));
  });

  it.each(STRICT)('every runnable block of %s comes from a file the tests run', (page) => {
    const loose = blocksOf(page).filter((block) => RUNNABLE.test(block.lang) && !block.include);
    expect(loose.map((block) => `${block.page}:${block.line}`)).toEqual([]);
  });
});

describe('docs stand alone', () => {
  it.each(PAGES)('every relative link of %s stays in the repository and exists', (page) => {
    const text = readFileSync(join(ROOT, page), 'utf8');
    const outside: string[] = [];
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:|^#/.test(target!)) continue;
      const path = resolve(ROOT, dirname(page), target!.split('#')[0]!);
      if (relative(ROOT, path).startsWith('..') || !existsSync(path)) outside.push(target!);
    }
    expect(outside).toEqual([]);
    expect(text).not.toMatch(/\.\.\/shared\//);
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
