// Follows every change of a thread over server-sent events from Node.js 20 (its fetch, no other
// dependency), and resumes after a dropped connection with the last cursor it applied (sent as
// Last-Event-ID): nothing is missed or repeated. Prints each change as one JSON line, and on
// stderr a line each time it is connected.
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

/** Reads one stream until it ends; returns true when it should be opened again. */
async function follow(): Promise<boolean> {
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
  if (!response.ok || !response.body) throw new Error(`HTTP ${response.status}: ${await response.text()}`);
  // On stderr, so stdout stays one JSON line per change. A refused subscription says why next.
  console.error(`connected to ${url}: following thread ${threadId}${lastCursor ? ` after ${lastCursor}` : ''}, one JSON line per change`);
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
      if (event === 'complete') return true;
      if (event !== 'next') continue; // a ":" keep-alive
      const data = lines.filter((line) => line.startsWith('data:')).map((line) => line.slice(5).trim()).join('\n');
      const result = JSON.parse(data);
      const error = result.errors?.[0];
      if (error) {
        if (error.extensions?.reason === 'SERVER_STOPPING') return true;
        console.error(`${error.extensions?.code}: ${error.message}`);
        process.exit(1);
      }
      console.log(JSON.stringify(result.data.threadChanges));
      lastCursor = result.data.threadChanges.cursor;
    }
  }
  return true; // the connection ended without `complete`: it dropped
}

for (;;) {
  try {
    await follow();
  } catch (error) {
    if (error instanceof Error && error.message.startsWith('HTTP ')) throw error;
    console.error(`disconnected (${String((error as Error).cause ?? error)}); resubscribing after ${lastCursor ?? 'now'}`);
  }
  await pause(1000);
}
