import type { Server } from 'node:http';
import type { WebSocketServer } from 'ws';
import type { Database } from '../db/database.js';
import type { BackgroundJobs } from './background-jobs.js';
import type { ChangeFeeds } from './storage.js';

export interface Running {
  http: { server: Server; drain(): void };
  webSocket: { wsServer: WebSocketServer; dispose(): Promise<void> | void };
  jobs: BackgroundJobs;
  feeds: ChangeFeeds;
  db: Database;
}

/**
 * The server's `stop`: after `drainMs` of answering /readyz 503, stops accepting, lets in-flight requests finish, then closes sockets, the
 * change feeds and the database, all within `timeoutMs`, after which every connection is cut.
 * Called again, it returns the same drain.
 */
export function gracefulStop(timeoutMs: number, { http, webSocket, jobs, feeds, db }: Running): (options?: { drainMs?: number }) => Promise<void> {
  const { server } = http;
  const { wsServer } = webSocket;
  let stopping: Promise<void> | null = null;
  return ({ drainMs = 0 } = {}) =>
    (stopping ??= (async () => {
      http.drain();
      // The drain window: /readyz answers 503 and everything else is still served (each answer
      // closing its connection), so a load balancer takes this instance out before it stops listening.
      if (drainMs > 0) await new Promise((resolve) => setTimeout(resolve, drainMs));
      // One deadline for the whole drain, armed before anything may wait: a WebSocket client
      // that never answers the close handshake would otherwise hold it for 30 s per socket.
      const cutAll = () => {
        server.closeAllConnections();
        for (const socket of wsServer.clients) socket.terminate();
      };
      const deadline = setTimeout(cutAll, timeoutMs);
      deadline.unref();
      // Stopped alongside the rest, awaited before the database closes: a sweep whose statement
      // waits on a database that does not answer must not keep the listener open and the
      // subscriptions unended until the deadline cuts them.
      const jobsStopped = jobs.stop();
      jobsStopped.catch(() => {}); // its failure is the stop's, when awaited below: not an unhandled rejection meanwhile
      const closed = server.listening ? new Promise<void>((resolve) => server.close(() => resolve())) : Promise.resolve();
      server.closeIdleConnections();
      await webSocket.dispose();
      wsServer.close();
      // An SSE subscription is a response that never ends by itself: end it, telling the client.
      feeds.interruptSubscriptions();
      // Connections whose last response just ended (SSE streams, keep-alive) close as soon as idle.
      const idleCloser = setInterval(() => server.closeIdleConnections(), 50);
      await closed;
      clearInterval(idleCloser);
      clearTimeout(deadline);
      await jobsStopped;
      await feeds.close();
      await db.close();
    })());
}
