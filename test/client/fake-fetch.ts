import type { FetchLike } from '@agent-audit/client';

export interface RecordedRequest {
  url: string;
  body: string;
  headers: Record<string, string>;
}

type Reply = (request: RecordedRequest, signal: AbortSignal | undefined) => Response | Promise<Response>;

/** A scripted transport: each request takes the next reply; the last one repeats. */
export function fakeFetch(...replies: Reply[]): FetchLike & { requests: RecordedRequest[] } {
  const requests: RecordedRequest[] = [];
  const fetchImpl = async (url: string, init: RequestInit) => {
    const request = { url, body: String(init.body), headers: { ...(init.headers as Record<string, string>) } };
    requests.push(request);
    const reply = replies[Math.min(requests.length, replies.length) - 1]!;
    return reply(request, init.signal ?? undefined);
  };
  return Object.assign(fetchImpl, { requests });
}

export const networkError: Reply = () => {
  throw new TypeError('fetch failed');
};

export const httpStatus =
  (status: number): Reply =>
  () =>
    new Response('<html>gateway</html>', { status, headers: { 'content-type': 'text/html' } });

export const graphqlError =
  (code: string, message = `${code} happened`): Reply =>
  () =>
    Response.json({ data: null, errors: [{ message, extensions: { code } }] });

export const graphqlData =
  (field: string, value: unknown): Reply =>
  () =>
    Response.json({ data: { [field]: value } });

/** Never answers; rejects when the client's timeout aborts it. */
export const hang: Reply = (_request, signal) =>
  new Promise((_resolve, reject) => {
    signal?.addEventListener('abort', () => reject(signal.reason));
  });

/** The lifecycle input as sent (only the fields the tests look at). */
interface SentInput {
  lease: unknown;
  sequence?: string;
  observedAt: string;
  clock: { clockId: string; nanos: string } | null;
}

export const variablesOf = (request: RecordedRequest) => (JSON.parse(request.body) as { variables: { input: SentInput } }).variables;

/** The server's own answer while its database cannot be reached (SEMANTICS "Errors"). */
export const unavailable =
  (retryAfterSeconds: number): Reply =>
  () =>
    Response.json(
      { errors: [{ message: 'The database cannot be reached for the moment. Retry with backoff.', extensions: { code: 'UNAVAILABLE' } }] },
      { status: 503, headers: { 'retry-after': String(retryAfterSeconds) } },
    );
