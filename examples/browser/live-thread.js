/* global fetch, URLSearchParams, EventSource, setTimeout, clearTimeout */
// A browser page's live view of a thread over SSE, with the browser's own EventSource.
// Load it as a file (no inline script) from a page of the audit server's origin: the server serves
// no page of yours, so put your page and /graphql behind one reverse proxy (docs/subscriptions.md).
//
// An EventSource cannot send an Authorization header, and a token in its URL would be kept in
// logs and history. So the page signs in once with its bearer token: the server answers with an
// HttpOnly, SameSite=Strict cookie that the browser sends to the stream path only
// (/graphql/stream), which opens subscriptions only. The stream URL holds the query and the
// thread id, never a token. After a dropped connection the EventSource reconnects by itself and
// sends the last cursor it received as Last-Event-ID: the server resumes right after it. Where
// the EventSource stops (a deploy), watchThread opens it again after that cursor.

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
 * { changeCursor }; omit it to start now). `onChange(change)` gets each { cursor, run, audit }.
 * It keeps following through a deploy: an instance stopping (SUBSCRIPTION_INTERRUPTED with reason
 * SERVER_STOPPING) or a reconnect the browser gave up on (an instance answering 503 while it
 * starts) opens the stream again after the last cursor, waiting 1 s, then longer (up to 30 s)
 * while that fails. `onEnd(error, cursor)` is called once when the stream ends for good: an error
 * result (UNAUTHENTICATED, NOT_FOUND, SUBSCRIPTION_INTERRUPTED with reason THREAD_DELETED,
 * TOKEN_EXPIRED or SIGNED_OUT: for the last two, sign in again and watch again `after: cursor`;
 * BAD_USER_INPUT for a cursor this server does not take, one of another database after a restore
 * or of a newer version on an older instance during an upgrade: read the thread again and watch
 * from its `changeCursor`), or null when the server completed it. Returns { close(), cursor }: close() stops following;
 * cursor is the last change's.
 */
function watchThread({ threadId, after, onChange, onEnd }) {
  const query = `subscription($t: ID!, $after: String) {
    threadChanges(threadId: $t, after: $after) { cursor run { id status } audit { id status } }
  }`;
  let cursor = after;
  let source = null;
  let retryTimer = null;
  let retryMs = 1000;
  let stopped = false;

  const stop = () => {
    stopped = true;
    clearTimeout(retryTimer);
    source?.close();
  };
  const end = (error) => {
    stop();
    onEnd?.(error, cursor);
  };
  const openAgainLater = () => {
    source.close();
    if (stopped) return;
    retryTimer = setTimeout(open, retryMs);
    retryMs = Math.min(retryMs * 2, 30_000);
  };
  function open() {
    const params = new URLSearchParams({ query, variables: JSON.stringify({ t: threadId, after: cursor }) });
    const stream = new EventSource(`/graphql/stream?${params}`);
    source = stream;
    stream.addEventListener('open', () => (retryMs = 1000));
    stream.addEventListener('next', (event) => {
      const result = JSON.parse(event.data);
      const error = result.errors?.[0];
      // Closed in both cases: the EventSource would otherwise reconnect and get the same error again.
      if (error?.extensions?.reason === 'SERVER_STOPPING') return openAgainLater();
      if (error) return end(error);
      cursor = result.data.threadChanges.cursor; // also event.lastEventId
      onChange(result.data.threadChanges);
    });
    stream.addEventListener('complete', () => end(null));
    // After a dropped connection the browser reconnects by itself (CONNECTING, sending
    // Last-Event-ID); an answer that is no stream (a 503 while an instance starts) makes it give up (CLOSED).
    stream.addEventListener('error', () => {
      if (stream.readyState === EventSource.CLOSED) openAgainLater();
    });
  }
  open();
  return {
    close: stop,
    get cursor() {
      return cursor;
    },
  };
}

// For the page's own scripts: <script src="live-thread.js"></script> then signInToStreams(token), watchThread({…}).
Object.assign(globalThis, { signInToStreams, watchThread });
