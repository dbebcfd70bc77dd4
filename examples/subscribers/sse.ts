// Follows every change of a thread over server-sent events from Node.js 20 (its fetch, no other
// dependency), and resumes with the last cursor it applied (sent as Last-Event-ID) after a
// dropped connection, a deploy or a server still starting (HTTP 503): nothing is missed or
// repeated. Prints each change as one JSON line, and on stderr a line each time it is connected
// or retries. Only a refusal (a bad token, a thread it may not read) ends it, with exit code 1.
//
//   AUDIT_OWNER_TOKEN=<superadmin token> AUDIT_THREAD_ID=<thread id> npx tsx examples/subscribers/sse.ts
//
// AUDIT_URL defaults to http://127.0.0.1:4000/graphql; AUDIT_AFTER (a cursor) starts after that change.
import { setTimeout as pause } from 'node:timers/promises';

const url = process.env.AUDIT_URL ?? 'http://127.0.0.1:4000/graphql';
const token = (process.env.AUDIT_OWNER_TOKEN ?? '').replace(/^Bearer\s+/i, '');
const threadId = process.env.AUDIT_THREAD_ID;
// One line saying what to set, rather than a stack trace.
if (!token) {
  console.error('AUDIT_OWNER_TOKEN is not set: give it a superadmin token (`npm start` prints one on its first start; `npm run -s token -- --sub me --role superadmin` mints more)');
  process.exit(1);
}
if (!threadId) {
  console.error('AUDIT_THREAD_ID is not set: give it the id of a thread that token owns (as createThread answers it, or as `npm run simulate` prints it)');
  process.exit(1);
}
let lastCursor = process.env.AUDIT_AFTER || undefined;

const query = `subscription($t: ID!) {
  threadChanges(threadId: $t) { cursor run { id status } audit { id status } }
}`;

/** An answer that is no stream: a refusal, or (`retryAfterMs` set) the server unavailable for now. */
class NotAStream extends Error {
  constructor(
    message: string,
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

/** The wait before the next attempt while attempts fail: doubled each time (up to 30 s), reset once connected. */
let backoffMs = 1000;

/** Reads one stream until it ends or drops (then it should be opened again). */
async function follow(): Promise<void> {
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      accept: 'text/event-stream',
      'content-type': 'application/json',
      authorization: `Bearer ${token}`,
      // Takes the place of `after`: the stream starts right after this cursor.
      ...(lastCursor ? { 'last-event-id': lastCursor } : {}),
    },
    body: JSON.stringify({ query, variables: { t: threadId } }),
  });
  if (!response.ok || !response.body) {
    const error = (await response.json().catch(() => null))?.errors?.[0];
    const message = `HTTP ${response.status}${error ? ` ${error.extensions?.code}: ${error.message}` : ''}`;
    // 503 while an instance starts or its database is away, 502/504 from a proxy in front of it,
    // 429: each says to come back (Retry-After: seconds). Any other 4xx would answer the same again.
    const retryable = response.status >= 500 || response.status === 429;
    throw new NotAStream(message, retryable ? (Number(response.headers.get('retry-after')) || 1) * 1000 : undefined);
  }
  // On stderr, so stdout stays one JSON line per change. A refused subscription says why next.
  console.error(`connected to ${url}: following thread ${threadId}${lastCursor ? ` after ${lastCursor}` : ''}, one JSON line per change`);
  backoffMs = 1000;
  const decoder = new TextDecoder();
  let buffer = '';
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const lines = buffer.slice(0, end).split('\n');
      buffer = buffer.slice(end + 2);
      const event = lines.find((line) => line.startsWith('event:'))?.slice(6).trim();
      if (event === 'complete') return;
      if (event !== 'next') continue; // a ":" keep-alive
      const data = lines.filter((line) => line.startsWith('data:')).map((line) => line.slice(5).trim()).join('\n');
      const result = JSON.parse(data);
      const error = result.errors?.[0];
      if (error) {
        if (error.extensions?.reason === 'SERVER_STOPPING') return;
        console.error(`${error.extensions?.code}: ${error.message}`);
        process.exit(1);
      }
      console.log(JSON.stringify(result.data.threadChanges));
      lastCursor = result.data.threadChanges.cursor;
    }
  }
  // The connection ended without `complete`: it dropped.
}

for (;;) {
  try {
    await follow();
  } catch (error) {
    if (error instanceof NotAStream && error.retryAfterMs === undefined) {
      console.error(error.message); // one line, e.g. HTTP 403 FORBIDDEN: …
      process.exit(1);
    }
    const why = error instanceof NotAStream ? error.message : String((error as Error).cause ?? error);
    const waitMs = Math.max(backoffMs, error instanceof NotAStream ? error.retryAfterMs! : 0);
    console.error(`disconnected (${why}); resubscribing after ${lastCursor ?? 'now'} in ${waitMs / 1000} s`);
    await pause(waitMs);
    backoffMs = Math.min(backoffMs * 2, 30_000);
    continue;
  }
  await pause(1000);
}
