// A live dashboard of tool activity across every thread of the token's owner, over graphql-ws
// from Node.js 20: the current view at once, then a new one within 2 seconds of each change
// (at most one a second) and at least once a minute while idle. Prints each view as one JSON line.
//
//   AUDIT_OWNER_TOKEN=<superadmin token> npx tsx examples/subscribers/dashboard.ts
//
// AUDIT_WS_URL defaults to ws://127.0.0.1:4000/graphql; AUDIT_WINDOW_SECONDS (60 to 604800, default
// 3600) is the window a view covers; AUDIT_TOOL keeps only that tool. A view lists the 20 busiest
// tools (the most calls first) and `toolCount`, how many there are in all.
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';

const url = process.env.AUDIT_WS_URL ?? 'ws://127.0.0.1:4000/graphql';
const token = (process.env.AUDIT_OWNER_TOKEN ?? '').replace(/^Bearer\s+/i, '');
// One line saying what to set, rather than a stack trace.
if (!token) {
  console.error('AUDIT_OWNER_TOKEN is not set: give it a superadmin token (`npm start` prints one on its first start; `npm run -s token -- --sub me --role superadmin` mints more)');
  process.exit(1);
}

const client = createClient({
  url,
  webSocketImpl: WebSocket, // Node.js 20 has no global WebSocket
  connectionParams: { authorization: `Bearer ${token}` },
  // A view is a state, not a stream of changes: after a dropped connection, the next view is all
  // a dashboard needs, so graphql-ws may simply subscribe again.
  retryAttempts: Infinity,
});

const query = `subscription($windowSeconds: Int, $name: String) {
  toolActivity(windowSeconds: $windowSeconds, name: $name) {
    at runningCount
    running(first: 5) { id name startedAt run { thread { id } } }
    recentFailures(first: 5) { id name error }
    toolCount
    tools(first: 20) { name calls running failureRate failed otherEnded p50DurationMs p95DurationMs maxDurationMs }
  }
}`;
const variables = { windowSeconds: Number(process.env.AUDIT_WINDOW_SECONDS ?? 3600), name: process.env.AUDIT_TOOL || null };

for await (const result of client.iterate({ query, variables })) {
  if (result.errors) {
    console.error(result.errors.map((e) => `${e.extensions?.code}: ${e.message}`).join('\n'));
    process.exit(1);
  }
  console.log(JSON.stringify(result.data!.toolActivity));
}
