import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { exportConfigFromEnv } from '../../src/export/config.js';

/* Every configuration block docs/export.md tells a user to set, read as the server reads it. */

const DOC = readFileSync(new URL('../../docs/export.md', import.meta.url), 'utf8');
const blocks = [...DOC.matchAll(/^### (.+)\n[\s\S]*?```sh\n([\s\S]*?)```/gm)].map(([, title, body]) => ({
  title: title!,
  env: Object.fromEntries(body!.trim().split('\n').map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)])),
}));

const expected: Record<string, { url: string; protocol: string; headers: Record<string, string> }> = {
  Langfuse: {
    url: 'https://cloud.langfuse.com/api/public/otel/v1/traces',
    protocol: 'http/protobuf',
    headers: { Authorization: `Basic ${Buffer.from('pk-lf-123:sk-lf-456').toString('base64')}`, 'x-langfuse-ingestion-version': '4' },
  },
  'Arize Phoenix': { url: 'http://localhost:6006/v1/traces', protocol: 'http/protobuf', headers: {} },
  Jaeger: { url: 'http://localhost:4318/v1/traces', protocol: 'http/protobuf', headers: {} },
};

describe('docs/export.md configuration examples', () => {
  it('has one for each back end it names', () => {
    expect(blocks.map((block) => block.title)).toEqual(Object.keys(expected));
  });

  it.each(Object.keys(expected))('%s: sends where the back end takes OTLP, with its credentials', (title) => {
    const block = blocks.find((candidate) => candidate.title === title)!;
    const config = exportConfigFromEnv(block.env)!;
    expect({ url: config.url, protocol: config.protocol, headers: config.headers }).toEqual(expected[title]);
  });
});

describe('the exporter variables', () => {
  it('are off without an endpoint, and refuse a protocol the server cannot speak', () => {
    expect(exportConfigFromEnv({})).toBeUndefined();
    expect(() => exportConfigFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(/http\/protobuf or http\/json/);
  });

  it('refuse a bad protocol, timeout or poll naming the variable that was set and its value (docs/operations.md, "cannot start")', () => {
    const start = (env: NodeJS.ProcessEnv) => () => exportConfigFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x', ...env });
    expect(start({ OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc' })).toThrow(/^OTEL_EXPORTER_OTLP_TRACES_PROTOCOL must be http\/protobuf or http\/json, got "grpc"/);
    expect(start({ OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: '10s' })).toThrow(/^OTEL_EXPORTER_OTLP_TRACES_TIMEOUT must be a positive integer \(ms\), got "10s"$/);
    expect(start({ OTEL_EXPORTER_OTLP_TIMEOUT: '0' })).toThrow(/^OTEL_EXPORTER_OTLP_TIMEOUT must be a positive integer \(ms\), got "0"$/);
    expect(start({ EXPORT_POLL_MS: 'abc' })).toThrow(/^EXPORT_POLL_MS must be a positive integer \(ms\), got "abc"$/);
  });

  it('take the traces endpoint as is, and the signal-specific values over the general ones', () => {
    const config = exportConfigFromEnv({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://general:4318/',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://traces:9999/custom',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_HEADERS: 'a=1,b=2',
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'b=3',
    })!;
    expect(config).toMatchObject({ url: 'http://traces:9999/custom', protocol: 'http/json', headers: { a: '1', b: '3' } });
    expect(exportConfigFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://general:4318/' })!.url).toBe('http://general:4318/v1/traces');
  });

  it('refuse headers that are not key=value pairs, naming the variable and the pair by its place, never its text (it may be a secret)', () => {
    const withHeaders = (headers: string) => () => exportConfigFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x', OTEL_EXPORTER_OTLP_HEADERS: headers });
    expect(withHeaders('garbage-secret')).toThrow(/^OTEL_EXPORTER_OTLP_HEADERS must be comma-separated key=value pairs \(W3C baggage format, values URL-encoded\): pair 1 is not$/);
    expect(withHeaders('a=1,=secret')).toThrow(/pair 2 is not/);
    expect(withHeaders('authorization=Bearer%2')).toThrow(/pair 1 is not/);
    expect(withHeaders('garbage-secret')).not.toThrow(/secret/);
    // Blank pairs (a trailing comma) are no pairs.
    expect(exportConfigFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x', OTEL_EXPORTER_OTLP_HEADERS: ' a = 1 , ' })!.headers).toEqual({ a: '1' });
  });
});
