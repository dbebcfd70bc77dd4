/* global fetch, URLSearchParams, EventSource */
// A browser page's live view of a thread over SSE, with the browser's own EventSource.
// Load it as a file (no inline script) from a page of the audit server's origin: the server serves
// no page of yours, so put your page and /graphql behind one reverse proxy (docs/subscriptions.md).
//
// An EventSource cannot send an Authorization header, and a token in its URL would be kept in
// logs and history. So the page signs in once with its bearer token: the server answers with an
// HttpOnly, SameSite=Strict cookie that the browser sends to the stream path only
// (/graphql/stream), which opens subscriptions only. The stream URL holds the query and the
// thread id, never a token. After a dropped connection the EventSource reconnects by itself and
// sends the last cursor it received as Last-Event-ID: the server resumes right after it.

/** Signs this tab in to the stream path; resolves with when the session expires (the token's exp). */
async function signInToStreams(token) {
  const response = await fetch('/graphql/stream-session', {
    method: 'POST',
    headers: { authorization: `Bearer ${token.replace(/^Bearer\s+/i, '')}` },
  });
  const body = await response.json();
  if (!response.ok) throw new Error(`${body.errors[0].extensions.code}: ${body.errors[0].message}`);
  return body.expiresAt;
}

/**
 * Follows `threadChanges` of `threadId` from `after` (a cursor from threadAudits or thread
 * { changeCursor }; omit it to start now). `onChange(change)` gets each { cursor, run, audit };
 * `onEnd(error)` is called once when the stream ends for good (an error result such as
 * UNAUTHENTICATED or SUBSCRIPTION_INTERRUPTED, or the server completed it). Returns the
 * EventSource; call close() on it to stop.
 */
function watchThread({ threadId, after, onChange, onEnd }) {
  const query = `subscription($t: ID!, $after: String) {
    threadChanges(threadId: $t, after: $after) { cursor run { id status } audit { id status } }
  }`;
  const params = new URLSearchParams({ query, variables: JSON.stringify({ t: threadId, after }) });
  const source = new EventSource(`/graphql/stream?${params}`);
  source.addEventListener('next', (event) => {
    const result = JSON.parse(event.data);
    if (result.errors) {
      // Without this close the EventSource would reconnect and get the same error again.
      source.close();
      onEnd?.(result.errors[0]);
      return;
    }
    onChange(result.data.threadChanges); // event.lastEventId is this change's cursor
  });
  source.addEventListener('complete', () => {
    source.close();
    onEnd?.(null);
  });
  return source;
}

// For the page's own scripts: <script src="live-thread.js"></script> then signInToStreams(token), watchThread({…}).
Object.assign(globalThis, { signInToStreams, watchThread });
