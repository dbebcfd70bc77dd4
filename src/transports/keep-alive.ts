import type { WebSocketServer } from 'ws';
import { cut } from './websocket.js';

/** graphql-ws's own keep-alive period: a connection is pinged this often and cut if a ping goes unanswered this long. */
export const KEEP_ALIVE_MS = 12_000;

/**
 * Protocol-level pings, as graphql-ws's keep-alive sends them, except that each connection's
 * first ping falls at a random point of its first period. graphql-ws pings each connection a
 * fixed period after it opened, so connections opened together (a deploy, a reconnect storm)
 * are pinged together ever after: a thousand pings and pongs in one burst, every period, and the
 * live changes wait behind it.
 */
export function keepConnectionsAlive(wsServer: WebSocketServer, periodMs = KEEP_ALIVE_MS): void {
  wsServer.on('connection', (socket) => {
    let unanswered: NodeJS.Timeout | null = null;
    let every: NodeJS.Timeout | null = null;
    const ping = () => {
      if (socket.readyState !== socket.OPEN) return;
      unanswered ??= setTimeout(() => cut(socket), periodMs);
      socket.ping();
    };
    const first = setTimeout(() => {
      ping();
      every = setInterval(ping, periodMs);
    }, Math.random() * periodMs);
    socket.on('pong', () => {
      if (unanswered) clearTimeout(unanswered);
      unanswered = null;
    });
    socket.once('close', () => {
      clearTimeout(first);
      if (every) clearInterval(every);
      if (unanswered) clearTimeout(unanswered);
    });
  });
}
