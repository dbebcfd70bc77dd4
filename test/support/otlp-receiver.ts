import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

/*
 * An OTLP/HTTP trace receiver for tests (node:http on 127.0.0.1). It takes `http/json` and
 * `http/protobuf`; protobuf bodies are decoded with protobufjs and the official OTLP .proto files
 * (test/fixtures/otlp-proto), independently of the exporter's own encoder. It can go down (stop
 * listening) and come back on the same port, or answer errors.
 */

const PROTO_ROOT = fileURLToPath(new URL('../fixtures/otlp-proto/', import.meta.url));
const root = new protobuf.Root();
root.resolvePath = (_origin, target) => PROTO_ROOT + target;
root.loadSync('opentelemetry/proto/collector/trace/v1/trace_service.proto');
const ExportRequest = root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
const ExportResponse = root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse');

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP SpanKind: 1 INTERNAL, 3 CLIENT. */
  kind: number;
  startTimeUnixNano: bigint;
  endTimeUnixNano: bigint;
  attributes: Record<string, unknown>;
  /** OTLP StatusCode: 0 UNSET, 2 ERROR. */
  status: { code: number; message?: string };
  links: { traceId: string; spanId: string; attributes: Record<string, unknown> }[];
  events: { name: string; attributes: Record<string, unknown> }[];
  resource: Record<string, unknown>;
  scope: { name: string };
  contentType: string;
  /** The headers of the request that carried the span. */
  headers: IncomingHttpHeaders;
}

type AnyValue = Record<string, any>;
type KeyValue = { key: string; value?: AnyValue };

function valueOf(value: AnyValue | undefined): unknown {
  if (!value) return undefined;
  if ('stringValue' in value) return value.stringValue;
  if ('intValue' in value) return Number(value.intValue);
  if ('doubleValue' in value) return Number(value.doubleValue);
  if ('boolValue' in value) return value.boolValue;
  if ('arrayValue' in value) return (value.arrayValue.values ?? []).map(valueOf);
  return undefined;
}
const attributesOf = (list: KeyValue[] | undefined) => Object.fromEntries((list ?? []).map(({ key, value }) => [key, valueOf(value)]));

/** Ids: hex in OTLP/JSON, base64 bytes after protobuf's toObject. */
const idOf = (id: string | undefined, hex: boolean) => (!id ? '' : hex ? id.toLowerCase() : Buffer.from(id, 'base64').toString('hex'));

function spansOf(request: AnyValue, contentType: string, headers: IncomingHttpHeaders): ReceivedSpan[] {
  const hex = contentType.includes('json');
  const spans: ReceivedSpan[] = [];
  for (const resourceSpans of request.resourceSpans ?? []) {
    const resource = attributesOf(resourceSpans.resource?.attributes);
    for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
      for (const span of scopeSpans.spans ?? []) {
        spans.push({
          traceId: idOf(span.traceId, hex),
          spanId: idOf(span.spanId, hex),
          parentSpanId: idOf(span.parentSpanId, hex),
          name: span.name,
          kind: Number(span.kind ?? 0),
          startTimeUnixNano: BigInt(span.startTimeUnixNano),
          endTimeUnixNano: BigInt(span.endTimeUnixNano),
          attributes: attributesOf(span.attributes),
          status: { code: Number(span.status?.code ?? 0), message: span.status?.message || undefined },
          links: (span.links ?? []).map((link: AnyValue) => ({
            traceId: idOf(link.traceId, hex),
            spanId: idOf(link.spanId, hex),
            attributes: attributesOf(link.attributes),
          })),
          events: (span.events ?? []).map((event: AnyValue) => ({ name: event.name, attributes: attributesOf(event.attributes) })),
          resource,
          scope: { name: scopeSpans.scope?.name },
          contentType,
          headers,
        });
      }
    }
  }
  return spans;
}

export interface OtlpReceiver {
  /** The base URL (OTEL_EXPORTER_OTLP_ENDPOINT); spans are taken at `${url}/v1/traces`. */
  url: string;
  /** Every span received, copies included, in arrival order. */
  spans: ReceivedSpan[];
  /** The headers of each request. */
  requests: { path: string; headers: IncomingHttpHeaders }[];
  /** Answer every request with this status instead of taking it (e.g. 503), or null to take them. */
  failWith: number | null;
  /** Answers for the next requests, one each in order, before failWith (e.g. 429 with a Retry-After header; null: as if unscripted); taken off as used. */
  script: ({ status: number; headers?: Record<string, string> } | null)[];
  /** While true, requests are taken (in `requests`) but left unanswered, as a collector that hangs. */
  hold: boolean;
  /** A larger request body is answered 413, as a collector's max_request_body_size does; null for no limit. */
  maxBodyBytes: number | null;
  /** How many requests were answered 413 for passing maxBodyBytes. */
  tooLarge: number;
  /** A request with a span this holds for is answered 400 (a collector refusing its content), whole; null to take them all. */
  refuse: ((span: ReceivedSpan) => boolean) | null;
  /** Taken requests are answered with this partial success (spans it says it rejected), or null for a full success. */
  partialSuccess: { rejectedSpans: number; errorMessage: string } | null;
  /** Taken requests are answered 200 with this body instead of OTLP's answer (a receiver or a proxy that says too much), or null. */
  answer: Buffer | null;
  /** Stops listening (connections are refused) until `up`. */
  down(): Promise<void>;
  up(): Promise<void>;
  close(): Promise<void>;
  /** Waits until `done(spans)` holds. */
  waitFor(done: (spans: ReceivedSpan[]) => boolean, timeoutMs?: number): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  let server: Server;
  let port = 0;
  const receiver: OtlpReceiver = {
    url: '',
    spans: [],
    requests: [],
    failWith: null,
    script: [],
    hold: false,
    maxBodyBytes: null,
    tooLarge: 0,
    refuse: null,
    partialSuccess: null,
    answer: null,
    async down() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
    async up() {
      await listen();
    },
    close() {
      return receiver.down();
    },
    async waitFor(done, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      while (!done(receiver.spans)) {
        if (Date.now() > deadline) throw new Error(`OTLP receiver: condition not met within ${timeoutMs} ms (${receiver.spans.length} spans)`);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    },
  };
  function listen() {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        receiver.requests.push({ path: req.url ?? '', headers: req.headers });
        const scripted = receiver.script.shift();
        if (scripted) return void res.writeHead(scripted.status, scripted.headers).end();
        if (receiver.failWith !== null) return void res.writeHead(receiver.failWith).end();
        if (receiver.hold) return;
        if (req.method !== 'POST' || req.url !== '/v1/traces') return void res.writeHead(404).end();
        const body = Buffer.concat(chunks);
        if (receiver.maxBodyBytes !== null && body.length > receiver.maxBodyBytes) {
          receiver.tooLarge++;
          return void res.writeHead(413).end();
        }
        const contentType = req.headers['content-type'] ?? '';
        try {
          const request = contentType.includes('json')
            ? JSON.parse(body.toString('utf8'))
            : ExportRequest.toObject(ExportRequest.decode(body), { longs: String, bytes: String, enums: Number, defaults: false });
          const spans = spansOf(request, contentType, req.headers);
          if (receiver.refuse && spans.some(receiver.refuse)) return void res.writeHead(400, { 'content-type': 'text/plain' }).end('refused');
          receiver.spans.push(...spans);
        } catch (error) {
          return void res.writeHead(400, { 'content-type': 'text/plain' }).end(String(error));
        }
        if (receiver.answer) return void res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(receiver.answer);
        const response = receiver.partialSuccess ? { partialSuccess: receiver.partialSuccess } : {};
        if (contentType.includes('json')) res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(response));
        else res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end(ExportResponse.encode(ExportResponse.fromObject(response)).finish());
      });
    });
    return new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        port = (server.address() as AddressInfo).port;
        receiver.url = `http://127.0.0.1:${port}`;
        resolve();
      });
    });
  }
  await listen();
  return receiver;
}
