/**
 * The OpenTelemetry export's settings, from the standard exporter variables
 * (https://opentelemetry.io/docs/specs/otel/protocol/exporter/): export is on when an OTLP
 * endpoint is set. The signal-specific variables take precedence over the general ones.
 */
export interface ExportConfig {
  /** Where spans are sent: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as is, or OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces. */
  url: string;
  protocol: 'http/protobuf' | 'http/json';
  headers: Record<string, string>;
  /** One request's deadline, its retries included (OTEL_EXPORTER_OTLP_TIMEOUT, ms). */
  timeoutMs: number;
  /** The `service.name` of the exported resource (OTEL_SERVICE_NAME). */
  serviceName: string;
  /** How often an idle exporter looks for new changes (EXPORT_POLL_MS). */
  pollMs: number;
}

const PROTOCOLS = ['http/protobuf', 'http/json'] as const;

/** `k1=v1,k2=v2`, values percent-encoded (the W3C baggage format the variables use). */
/** `key=value` pairs, comma-separated, URL-encoded; a pair that is not one is refused by its place (its text may be a secret). */
function parseHeaders(name: string, text: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [index, pair] of (text ?? '').split(',').entries()) {
    if (!pair.trim()) continue;
    const at = pair.indexOf('=');
    let header: [string, string] | undefined;
    try {
      if (at > 0) header = [decodeURIComponent(pair.slice(0, at).trim()), decodeURIComponent(pair.slice(at + 1).trim())];
    } catch {
      // a malformed %-escape
    }
    if (!header?.[0]) throw new Error(`${name} must be comma-separated key=value pairs (W3C baggage format, values URL-encoded): pair ${index + 1} is not`);
    headers[header[0]] = header[1];
  }
  return headers;
}

/** `OTEL_EXPORTER_OTLP_TRACES_<key>` when set, else `OTEL_EXPORTER_OTLP_<key>`: the variable that decides, by name. */
function signalSpecific(env: NodeJS.ProcessEnv, key: string): { name: string; value: string } | undefined {
  for (const name of [`OTEL_EXPORTER_OTLP_TRACES_${key}`, `OTEL_EXPORTER_OTLP_${key}`]) {
    if (env[name]) return { name, value: env[name] };
  }
  return undefined;
}

function positiveMs({ name, value }: { name: string; value: string }): number {
  const ms = Number(value);
  if (!Number.isInteger(ms) || ms < 1) throw new Error(`${name} must be a positive integer (ms), got "${value}"`);
  return ms;
}

export function exportConfigFromEnv(env: NodeJS.ProcessEnv): ExportConfig | undefined {
  const general = env.OTEL_EXPORTER_OTLP_ENDPOINT || undefined;
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || undefined;
  if (!general && !traces) return undefined;
  const given = traces ? 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' : 'OTEL_EXPORTER_OTLP_ENDPOINT';
  const endpoint = (traces ?? general)!;
  if (!(URL.canParse(endpoint) && ['http:', 'https:'].includes(new URL(endpoint).protocol))) {
    throw new Error(`${given} must be an http:// or https:// URL, got "${endpoint}"`);
  }
  const url = traces ?? `${general!.replace(/\/+$/, '')}/v1/traces`;
  const protocol = signalSpecific(env, 'PROTOCOL') ?? { name: 'OTEL_EXPORTER_OTLP_PROTOCOL', value: 'http/protobuf' };
  if (!(PROTOCOLS as readonly string[]).includes(protocol.value)) {
    throw new Error(`${protocol.name} must be http/protobuf or http/json, got "${protocol.value}" (grpc is not supported)`);
  }
  const timeout = positiveMs(signalSpecific(env, 'TIMEOUT') ?? { name: 'OTEL_EXPORTER_OTLP_TIMEOUT', value: '10000' });
  const pollMs = positiveMs({ name: 'EXPORT_POLL_MS', value: env.EXPORT_POLL_MS || '200' });
  return {
    url,
    protocol: protocol.value as ExportConfig['protocol'],
    headers: {
      ...parseHeaders('OTEL_EXPORTER_OTLP_HEADERS', env.OTEL_EXPORTER_OTLP_HEADERS),
      ...parseHeaders('OTEL_EXPORTER_OTLP_TRACES_HEADERS', env.OTEL_EXPORTER_OTLP_TRACES_HEADERS),
    },
    timeoutMs: timeout,
    serviceName: env.OTEL_SERVICE_NAME || 'agent-audit-server',
    pollMs,
  };
}
