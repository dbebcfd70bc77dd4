import { readFileSync } from 'node:fs';
import type { ClientRequest, IncomingMessage, RequestOptions } from 'node:http';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { createGzip } from 'node:zlib';
import { OTLPExporterError } from '@opentelemetry/otlp-exporter-base';
import { convertLegacyHttpOptions } from '@opentelemetry/otlp-exporter-base/node-http';
import { JsonTraceSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { ExportConfig } from './config.js';

/*
 * One OTLP/HTTP request per call, no retry of its own: the exporter's loop decides when to try
 * again, so a receiver's Retry-After, a stop and the backoff are in one place (exporter.ts). The
 * official exporters retry inside a request, out of the caller's sight, and drop a Retry-After
 * longer than the request's deadline. The request body, the settings (the standard variables,
 * certificates and compression included) and the response are the official packages'.
 */

/** Why a try failed, as agent_audit_export_failures_total counts it (docs/export.md "Operating it"). */
export type FailureReason = 'throttled' | 'unavailable' | 'refused' | 'timeout' | 'unreachable' | 'tls';

const reasonOfStatus = (status: number): FailureReason => (status === 429 ? 'throttled' : status >= 500 ? 'unavailable' : 'refused');
/** A socket's error code: the receiver's certificate or TLS handshake, else the network. */
const reasonOfCode = (code: string | undefined): FailureReason =>
  code && /CERT|SELF_SIGNED|UNABLE_TO_(GET|VERIFY)|^ERR_(TLS|SSL)|^EPROTO$/.test(code) ? 'tls' : 'unreachable';

/** The receiver did not take the request: why, its status when it answered, and when it asked to be tried again. */
export class ReceiverFailed extends OTLPExporterError {
  constructor(
    message: string,
    readonly reason: FailureReason,
    options: {
      status?: number;
      /** From Retry-After (seconds or an HTTP date) on a 429 or 503; undefined when it gave none. */
      retryAfterMs?: number;
      /** The socket's error code (ECONNREFUSED, DEPTH_ZERO_SELF_SIGNED_CERT…). */
      errorCode?: string;
    } = {},
  ) {
    super(message, options.status);
    this.retryAfterMs = options.retryAfterMs;
    this.errorCode = options.errorCode;
  }
  readonly retryAfterMs?: number;
  readonly errorCode?: string;
}

/** What a receiver that took a request said of it: the spans it rejected (OTLP partial success). */
export interface Taken {
  rejectedSpans: number;
  receiverMessage?: string;
}

/** Retry-After as ms from now: delay-seconds or an HTTP date (RFC 9110 10.2.3); undefined when absent or unreadable. */
export function retryAfterMs(header: string | undefined, nowMs: number): number | undefined {
  if (!header) return undefined;
  if (/^\s*\d+\s*$/.test(header)) return Number(header) * 1000;
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

const versionOf = (packageJson: URL) => (JSON.parse(readFileSync(packageJson, 'utf8')) as { version: string }).version;
/**
 * This server's product token, then the official exporters' own User-Agent, as the OTLP exporter
 * specification asks of a product identifier ("the resulting User-Agent SHOULD include the
 * exporter's default"): `agent-audit-server/0.1.0 OTel-OTLP-Exporter-JavaScript/0.219.0`.
 */
export const USER_AGENT = `agent-audit-server/${versionOf(new URL('../../package.json', import.meta.url))} OTel-OTLP-Exporter-JavaScript/${versionOf(
  new URL('../../package.json', pathToFileURL(createRequire(import.meta.url).resolve('@opentelemetry/otlp-exporter-base'))),
)}`;

const RETRY_AFTER_STATUSES = [429, 503];
const MAX_ANSWER_BYTES = 4 * 1024 * 1024;

export function otlpTransport(config: ExportConfig) {
  const json = config.protocol === 'http/json';
  const serializer = json ? JsonTraceSerializer : ProtobufTraceSerializer;
  const settings = convertLegacyHttpOptions({ url: config.url, headers: config.headers, timeoutMillis: config.timeoutMs }, 'TRACES', 'v1/traces', {
    'Content-Type': json ? 'application/json' : 'application/x-protobuf',
  });
  const protocol = new URL(settings.url).protocol;
  const loaded = Promise.all([settings.agentFactory(protocol), import(protocol === 'http:' ? 'node:http' : 'node:https')]);

  /** Sends the spans; rejects with ReceiverFailed unless the receiver took them. `signal` abandons the request (a stop). */
  async function send(spans: ReadableSpan[], signal: AbortSignal): Promise<Taken> {
    const body = serializer.serializeRequest(spans);
    if (!body) throw new Error('the spans could not be serialized');
    const [[agent, http], headers] = await Promise.all([loaded, settings.headers()]);
    headers['User-Agent'] = USER_AGENT;
    if (settings.compression === 'gzip') headers['Content-Encoding'] = 'gzip';
    const response = await new Promise<{ message: IncomingMessage; data: Buffer | undefined }>((resolve, reject) => {
      const options: RequestOptions = { method: 'POST', headers, agent, signal, timeout: settings.timeoutMillis };
      const request: ClientRequest = http.request(settings.url, options, (message: IncomingMessage) => {
        const chunks: Buffer[] = [];
        let size = 0;
        message.on('data', (chunk: Buffer) => {
          // An answer is a few bytes; one that says more is not read further (as the official
          // transport does), and its status still tells whether the spans were taken (a 200: they were).
          if ((size += chunk.length) > MAX_ANSWER_BYTES) {
            resolve({ message, data: undefined }); // first: the socket's end that follows is no failure
            return void message.destroy();
          }
          chunks.push(chunk);
        });
        message.on('end', () => resolve({ message, data: Buffer.concat(chunks) }));
        message.on('error', (error: Error & { code?: string }) => reject(new ReceiverFailed(error.message, 'unreachable', { errorCode: error.code })));
      });
      request.on('timeout', () => request.destroy(new ReceiverFailed(`no answer within ${settings.timeoutMillis} ms`, 'timeout')));
      request.on('error', (error: Error & { code?: string }) =>
        reject(error instanceof ReceiverFailed ? error : new ReceiverFailed(error.message, reasonOfCode(error.code), { errorCode: error.code })),
      );
      if (settings.compression === 'gzip') createGzip().on('error', reject).end(body).pipe(request);
      else request.end(body);
    });
    const { message, data } = response;
    const status = message.statusCode ?? 0;
    if (status < 200 || status > 299) {
      const retryAfter = RETRY_AFTER_STATUSES.includes(status) ? retryAfterMs(message.headers['retry-after'], Date.now()) : undefined;
      throw new ReceiverFailed(message.statusMessage || `status ${status}`, reasonOfStatus(status), { status, retryAfterMs: retryAfter });
    }
    if (!data?.length) return { rejectedSpans: 0 }; // no answer, or one not read whole: nothing to count
    try {
      const partial = serializer.deserializeResponse(data).partialSuccess;
      return { rejectedSpans: Number(partial?.rejectedSpans ?? 0), receiverMessage: partial?.errorMessage || undefined };
    } catch {
      return { rejectedSpans: 0 }; // taken, with an answer that is not OTLP's: nothing to count
    }
  }
  return { send };
}
