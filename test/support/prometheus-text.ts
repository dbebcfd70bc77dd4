/**
 * A strict reader of the Prometheus text exposition format (version 0.0.4): every line must be a
 * `# HELP`, a `# TYPE` or a sample `name{label="value",...} value`; anything else throws. Returns
 * each sample's value by its series (`name{labels}` as written).
 */
const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const LABEL = `[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\\\\n]|\\\\[\\\\"n])*"`;
// A value is what Go's ParseFloat takes, so NaN in any case: prom-client writes `Nan` (the
// event-loop lag's mean before any sample).
const SAMPLE = new RegExp(`^(${NAME})(\\{(?:${LABEL}(?:,${LABEL})*,?)?\\})? (-?[0-9.eE+-]+|[Nn][Aa][Nn]|\\+Inf|-Inf)(?: -?[0-9]+)?$`);
const HELP = new RegExp(`^# HELP ${NAME} .*$`);
const TYPE = new RegExp(`^# TYPE (${NAME}) (counter|gauge|histogram|summary|untyped)$`);

export interface PrometheusText {
  samples: Map<string, number>;
  types: Map<string, string>;
}

export function parsePrometheusText(text: string): PrometheusText {
  const samples = new Map<string, number>();
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const type = TYPE.exec(line);
    if (type) {
      types.set(type[1]!, type[2]!);
      continue;
    }
    if (HELP.test(line)) continue;
    const sample = SAMPLE.exec(line);
    if (!sample) throw new Error(`Not Prometheus text: ${JSON.stringify(line)}`);
    samples.set(`${sample[1]}${sample[2] ?? ''}`, Number(sample[3]));
  }
  return { samples, types };
}
