import type { ClientRequest, IncomingMessage, RequestOptions } from 'node:http';
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

/** The receiver did not take the request: its status when it answered, and when it asked to be tried again. */
export class ReceiverFailed extends OTLPExporterError {
  constructor(
    message: string,
    code?: number,
    /** From Retry-After (seconds or an HTTP date) on a 429 or 503; undefined when it gave none. */
    readonly retryAfterMs?: number,
  ) {
    super(message, code);
  }
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

const RETRY_AFTER_STATUSES = [429, 503];

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
    if (!body) throw new ReceiverFailed('the spans could not be serialized');
    const [[agent, http], headers] = await Promise.all([loaded, settings.headers()]);
    if (settings.userAgent) headers['User-Agent'] = settings.userAgent;
    if (settings.compression === 'gzip') headers['Content-Encoding'] = 'gzip';
    const response = await new Promise<{ message: IncomingMessage; data: Buffer }>((resolve, reject) => {
      const options: RequestOptions = { method: 'POST', headers, agent, signal, timeout: settings.timeoutMillis };
      const request: ClientRequest = http.request(settings.url, options, (message: IncomingMessage) => {
        const chunks: Buffer[] = [];
        message.on('data', (chunk: Buffer) => chunks.push(chunk));
        message.on('end', () => resolve({ message, data: Buffer.concat(chunks) }));
        message.on('error', reject);
      });
      request.on('timeout', () => request.destroy(new ReceiverFailed(`no answer within ${settings.timeoutMillis} ms`)));
      request.on('error', (error) => reject(error instanceof ReceiverFailed ? error : new ReceiverFailed(error.message)));
      if (settings.compression === 'gzip') createGzip().on('error', reject).end(body).pipe(request);
      else request.end(body);
    });
    const { message, data } = response;
    const status = message.statusCode ?? 0;
    if (status < 200 || status > 299) {
      const retryAfter = RETRY_AFTER_STATUSES.includes(status) ? retryAfterMs(message.headers['retry-after'], Date.now()) : undefined;
      throw new ReceiverFailed(message.statusMessage || `status ${status}`, status, retryAfter);
    }
    if (data.length === 0) return { rejectedSpans: 0 };
    try {
      const partial = serializer.deserializeResponse(data).partialSuccess;
      return { rejectedSpans: Number(partial?.rejectedSpans ?? 0), receiverMessage: partial?.errorMessage || undefined };
    } catch {
      return { rejectedSpans: 0 }; // taken, with an answer that is not OTLP's: nothing to count
    }
  }
  return { send };
}
