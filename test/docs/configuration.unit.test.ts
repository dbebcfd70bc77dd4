// The README's configuration table is what the server does: each variable's default is the value
// it takes unset, and each bound the table states ("at least N", "at most N", "N to M") is where
// the start begins to refuse.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig, type Config } from '../../src/config.js';

const README = readFileSync(join(import.meta.dirname, '../../README.md'), 'utf8');
const section = README.slice(README.indexOf('## Configuration'));
const table = section.slice(0, section.indexOf('\n\n', section.indexOf('| --- |')));

interface Row {
  name: string;
  default: string;
  meaning: string;
}

/** The rows naming one variable whose default is a literal value. */
const rows: Row[] = [...table.matchAll(/^\| `([A-Z_]+)` \| `([^`]+)`[^|]*\| (.*) \|$/gm)].map(([, name, value, meaning]) => ({
  name: name!,
  default: value!,
  meaning: meaning!,
}));

/** The setting a variable sets: `MAX_JSON_BYTES` is `maxJsonBytes`, `WS_INIT_TIMEOUT_MS` is `webSocket.initTimeoutMs`. */
function setting(config: Config, name: string): unknown {
  const camel = (words: string) => words.toLowerCase().replace(/_([a-z])/g, (_, letter: string) => letter.toUpperCase());
  if (name.startsWith('WS_')) return (config.webSocket as unknown as Record<string, unknown>)[camel(name.slice(3))];
  return (config as unknown as Record<string, unknown>)[camel(name)];
}

/** Read by the logger, the install step or computed from others: no setting of their own name. */
const ELSEWHERE = new Set(['LOG_LEVEL', 'AUDIT_SERVER_TEMPLATE_DIR', 'INSTANCE_ID']);

describe("the README's configuration table", () => {
  it('lists the variables it is read for', () => {
    expect(rows.map((row) => row.name)).toEqual(expect.arrayContaining(['PORT', 'MAX_JSON_BYTES', 'WS_INIT_TIMEOUT_MS', 'RETENTION_SWEEP_INTERVAL_MS']));
  });

  it.each(rows.filter((row) => !ELSEWHERE.has(row.name)).map((row) => [row.name, row] as const))('%s: its default is the value taken unset', (_name, row) => {
    expect(String(setting(loadConfig({}), row.name))).toBe(row.default);
  });

  const bounded = rows.flatMap((row) => {
    const least = /at least (\d+)\b(?! ×)/i.exec(row.meaning)?.[1] ?? /\((\d+) to \d+\)/.exec(row.meaning)?.[1];
    const most = /at most (\d+)\b(?! ×)/i.exec(row.meaning)?.[1] ?? /\(\d+ to (\d+)\)/.exec(row.meaning)?.[1];
    return [
      ...(least ? [[`${row.name} at least ${least}`, row.name, Number(least), -1] as const] : []),
      ...(most ? [[`${row.name} at most ${most}`, row.name, Number(most), 1] as const] : []),
    ];
  });

  it('states bounds', () => {
    expect(bounded.length).toBeGreaterThan(10);
  });

  it.each(bounded)('%s', (_title, name, bound, past) => {
    expect(setting(loadConfig({ [name]: String(bound) }), name)).toBe(bound);
    expect(() => loadConfig({ [name]: String(bound + past) })).toThrow(name);
  });
});
