// Follows every change of a thread over graphql-ws (WebSocket) from Node.js 20, and resumes after
// a dropped connection with `after:` the last cursor it applied: nothing is missed or repeated.
// Prints each change as one JSON line, and on stderr a line each time it is connected.
//
//   AUDIT_OWNER_TOKEN=<superadmin token> AUDIT_THREAD_ID=<thread id> npx tsx examples/subscribers/graphql-ws.ts
//
// AUDIT_WS_URL defaults to ws://127.0.0.1:4000/graphql; AUDIT_AFTER (a cursor from threadAudits or
// thread { changeCursor }) starts after that change instead of now.
import { setTimeout as pause } from 'node:timers/promises';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';

const url = process.env.AUDIT_WS_URL ?? 'ws://127.0.0.1:4000/graphql';
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
let after = process.env.AUDIT_AFTER || undefined;

const client = createClient({
  url,
  webSocketImpl: WebSocket, // Node.js 20 has no global WebSocket
  connectionParams: { authorization: `Bearer ${token}` },
  // graphql-ws would resubscribe by itself with the first variables; this loop resubscribes with
  // the last cursor instead.
  retryAttempts: 0,
  // On stderr, so stdout stays one JSON line per change. A refused subscription says why next.
  on: { connected: () => console.error(`connected to ${url}: following thread ${threadId}${after ? ` after ${after}` : ''}, one JSON line per change`) },
});

/** Why the connection dropped, readable: a close's code and reason, or a socket error's message. */
function reason(error: unknown): string {
  const { code, reason, message, error: cause } = error as { code?: number; reason?: string; message?: string; error?: Error };
  if (code !== undefined) return reason ? `${code} ${reason}` : `code ${code}`;
  return message || cause?.message || String(error);
}

const query = `subscription($t: ID!, $after: String) {
  threadChanges(threadId: $t, after: $after) { cursor run { id status } audit { id status } }
}`;

for (;;) {
  try {
    for await (const result of client.iterate({ query, variables: { t: threadId, after } })) {
      const error = result.errors?.[0];
      if (error) {
        // SUBSCRIPTION_INTERRUPTED (SERVER_STOPPING): subscribe again; anything else is final.
        if (error.extensions?.reason === 'SERVER_STOPPING') break;
        console.error(`${error.extensions?.code}: ${error.message}`);
        process.exit(1);
      }
      const change = (result.data as { threadChanges: { cursor: string } }).threadChanges;
      console.log(JSON.stringify(change));
      after = change.cursor;
    }
  } catch (error) {
    // An `error` message (a document that does not validate, say) is an array of GraphQL errors: final.
    if (Array.isArray(error)) {
      console.error(error.map((e) => `${e.extensions?.code}: ${e.message}`).join('\n'));
      process.exit(1);
    }
    console.error(`disconnected (${reason(error)}); resubscribing after ${after ?? 'now'}`);
  }
  await pause(1000);
}
