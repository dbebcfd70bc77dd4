import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { backendName, onPostgres } from '../support/database.js';
import { parsePrometheusText, type PrometheusText } from '../support/prometheus-text.js';
import { testRedisUrl } from '../subscriptions/support.js';

/*
 * The alerting rules docs/operations.md shows (examples/operations/alerts.yml) against a live scrape
 * of a fresh server: a rule naming a metric or a label the server does not serve, or a series that
 * appears only with its first event (rate() and increase() then miss that event), never fires.
 */
const RULES_FILE = join(import.meta.dirname, '../../examples/operations/alerts.yml');
const RULES = readFileSync(RULES_FILE, 'utf8');
/** Prometheus's own checker (Debian's prometheus package), where installed: the file loads as written. */
const PROMTOOL = process.env.PROMTOOL_PATH ?? '/usr/bin/promtool';
const expressions = [...RULES.matchAll(/^\s+- alert: (\S+)\n\s+expr: (.+)$/gm)].map(([, alert, expr]) => ({ alert: alert!, expr: expr! }));

interface Selector {
  metric: string;
  matchers: { label: string; op: string; value: string }[];
}

const KEYWORDS = new Set([
  ...['and', 'or', 'unless', 'bool', 'offset', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right'],
  // Aggregations, followed by their grouping before their parenthesis.
  ...['sum', 'min', 'max', 'avg', 'group', 'stddev', 'stdvar', 'count', 'count_values', 'bottomk', 'topk', 'quantile'],
]);
/** Grouping label lists, ranges, strings, or a name with its matchers (a function when a parenthesis follows). */
const TOKEN = /\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)|\[[^\]]*\]|"(?:[^"\\]|\\.)*"|\b([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\{[^}]*\})?(\s*\()?/g;
const MATCHER = /([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"/g;

/** The series selectors of a PromQL expression and the labels it groups or matches by. */
function parse(expr: string): { selectors: Selector[]; grouping: string[] } {
  const selectors: Selector[] = [];
  const grouping: string[] = [];
  for (const [, labels, name, braces, call] of expr.matchAll(TOKEN)) {
    if (labels !== undefined) grouping.push(...labels.split(',').map((label) => label.trim()).filter(Boolean));
    if (!name || call || KEYWORDS.has(name) || /^[0-9]/.test(name)) continue;
    const matchers = [...(braces ?? '').matchAll(MATCHER)].map(([, label, op, value]) => ({ label: label!, op: op!, value: value! }));
    selectors.push({ metric: name, matchers });
  }
  return { selectors, grouping };
}

/** Labels Prometheus adds to every series it scrapes. */
const TARGET_LABELS = new Set(['instance', 'job']);
/** Series that only some set-ups serve: the pool's on PostgreSQL, Redis's with REDIS_URL. */
const ONLY_SOMETIMES: Record<string, boolean> = {
  agent_audit_db_pool_connections: onPostgres,
  agent_audit_db_pool_max_connections: onPostgres,
  agent_audit_redis_up: Boolean(testRedisUrl),
  agent_audit_redis_unsent_signals: Boolean(testRedisUrl),
};
const servedHere = (metric: string) => ONLY_SOMETIMES[metric] ?? true;

/** The family a series name belongs to (a histogram's _bucket, _sum and _count are its family's). */
const familyOf = (text: PrometheusText, metric: string) => {
  const base = metric.replace(/_(bucket|sum|count)$/, '');
  return text.types.get(metric) ? metric : text.types.get(base) === 'histogram' ? base : undefined;
};

/** Each series of `metric` in the scrape, as its labels. */
const seriesOf = (text: PrometheusText, metric: string) =>
  [...text.samples.keys()]
    .filter((series) => series === metric || series.startsWith(`${metric}{`))
    .map((series) => Object.fromEntries([...series.slice(metric.length).matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map(([, label, value]) => [label!, value!])));

describe(`the alerting rules of docs/operations.md against a fresh server's GET /metrics (${backendName}${testRedisUrl ? ', Redis' : ''})`, () => {
  let t: TestApp;
  let raw: string;
  let text: PrometheusText;
  beforeAll(async () => {
    t = await startTestApp({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', ...(testRedisUrl ? { REDIS_URL: testRedisUrl } : {}) });
    const url = await t.app.start(0, '127.0.0.1');
    const response = await fetch(url.replace('/graphql', '/metrics'));
    expect(response.status).toBe(200);
    raw = await response.text();
    text = parsePrometheusText(raw);
  });
  afterAll(async () => t?.close());

  // Skipped where Prometheus's promtool is not installed (apt-get install prometheus), unless REQUIRE_PROMTOOL=1 (CI).
  it.runIf(existsSync(PROMTOOL) || process.env.REQUIRE_PROMTOOL === '1')('load into Prometheus as written (promtool check rules)', () => {
    if (!existsSync(PROMTOOL)) throw new Error(`REQUIRE_PROMTOOL=1, but there is no promtool at ${PROMTOOL} (PROMTOOL_PATH)`);
    expect(execFileSync(PROMTOOL, ['check', 'rules', RULES_FILE], { encoding: 'utf8' })).toMatch(/SUCCESS: \d+ rules found/);
  });

  it('are read from the file', () => {
    expect(expressions.length).toBe(RULES.match(/- alert: /g)!.length);
    expect(expressions.length).toBeGreaterThan(10);
  });

  it.each(expressions.map(({ alert, expr }) => [alert, expr] as const))('%s names served metrics and labels, each series it matches there before its first event: %s', (_alert, expr) => {
    const { selectors, grouping } = parse(expr);
    expect(selectors.length).toBeGreaterThan(0);
    const wrong: string[] = [];
    const labelsSeen = new Set([...TARGET_LABELS]);
    let partly = false;
    for (const { metric, matchers } of selectors) {
      if (metric === 'up') continue; // Prometheus's own, one per target
      const family = familyOf(text, metric);
      if (!servedHere(metric)) {
        if (family) wrong.push(`${metric} is served here, where the test takes it for absent`);
        partly = true;
        continue;
      }
      if (!family) {
        wrong.push(`${metric}: no such metric`);
        continue;
      }
      if (!new RegExp(`^# HELP ${family} \\S`, 'm').test(raw)) wrong.push(`${family}: no HELP`);
      const series = seriesOf(text, metric);
      for (const labels of series) for (const label of Object.keys(labels)) labelsSeen.add(label);
      if (metric.endsWith('_bucket')) labelsSeen.add('le'); // before a histogram's first observation too
      for (const { label, op, value } of matchers) {
        if (TARGET_LABELS.has(label)) continue;
        const values = new Set(series.map((labels) => labels[label]).filter((each) => each !== undefined));
        if (values.size === 0) wrong.push(`${metric}: no series with a label ${label}`);
        // The values an equality or an alternation of literals names, each at 0 from the start.
        const named = op === '=' ? [value] : op === '=~' && /^[A-Za-z0-9_|-]+$/.test(value) ? value.split('|') : [];
        for (const each of named) if (!values.has(each)) wrong.push(`${metric}{${label}="${each}"}: no series before its first event`);
      }
    }
    for (const label of partly ? [] : grouping) if (!labelsSeen.has(label)) wrong.push(`grouped by ${label}, a label of none of its metrics`);
    expect(wrong).toEqual([]);
  });
});
