import { CloseCode, handleProtocols, makeServer, MessageType, parseMessage, type ConnectionInitMessage, type Message, type ServerOptions } from 'graphql-ws';
import type { Extra } from 'graphql-ws/use/ws';
import type { WebSocket, WebSocketServer } from 'ws';
import { echoed } from '../graphql/errors.js';
import { errorFields, log } from '../log.js';

/** What a graphql-transport-ws client may send; the other types are the server's. */
const CLIENT_MESSAGE_TYPES: ReadonlySet<string> = new Set([MessageType.ConnectionInit, MessageType.Ping, MessageType.Pong, MessageType.Subscribe, MessageType.Complete]);

/** The message `data` is, if it is a well-formed one. */
function parsed(data: string): Message | undefined {
  try {
    return parseMessage(data);
  } catch {
    return undefined; // not a message of the protocol: graphql-ws closes with 4400 itself
  }
}

/**
 * A close reason is at most 123 bytes (RFC 6455 §5.5), and graphql-ws quotes a client's
 * subscription id in one: ws would throw, leaving the connection half closed. 30 code points
 * (4 bytes at most each) and "…" are 123 bytes at most.
 */
const closeReason = (reason: string | undefined) => (reason === undefined || Buffer.byteLength(reason) <= 123 ? reason : echoed(reason, 30));

/**
 * graphql-ws's server on `ws`, bound as its `useServer` binds it (without pings: the caller sends
 * them), except that nothing reaches the output but the server's JSON log lines: graphql-ws's
 * binding closes a client-sent `next`, `error` or `connection_ack` with 4500 and prints a stack
 * trace for it, so any client could flood the logs. Such a message is the client's error, closed
 * here with 4400 before graphql-ws sees it; a failure in handling a message is logged as one line.
 */
export function serveGraphQLWs(
  options: ServerOptions<ConnectionInitMessage['payload'], Extra>,
  wsServer: WebSocketServer,
  /** False closes a new socket at once with 1013 (Try Again Later). */
  admit: (socket: WebSocket) => boolean,
  /** The client sent `complete` for its operation `id` (graphql-ws's onComplete comes only once the operation has ended). */
  completedByClient: (socket: WebSocket, id: string) => void,
) {
  const server = makeServer(options);
  wsServer.options.handleProtocols = handleProtocols;
  // The HTTP server's errors (a failed listen) arrive here too.
  wsServer.on('error', (error) => log.error({ component: 'graphql-ws', error: errorFields(error) }, 'WebSocket server error'));
  wsServer.on('connection', (socket, request) => {
    // A frame ws refuses (invalid UTF-8, over maxPayload) is the client's: ws closes the connection itself.
    socket.on('error', () => {});
    if (!admit(socket)) return socket.close(1013, 'Too many connections without a valid token on this server: try again later');
    const closed = server.opened(
      {
        protocol: socket.protocol,
        send: (data) =>
          new Promise<void>((resolve, reject) => {
            if (socket.readyState !== socket.OPEN) return resolve();
            socket.send(data, (error) => (error ? reject(error) : resolve()));
          }),
        close: (code, reason) => socket.close(code, closeReason(reason)),
        onMessage: (handle) =>
          socket.on('message', async (data) => {
            const text = String(data);
            const message = parsed(text);
            if (message && !CLIENT_MESSAGE_TYPES.has(message.type)) return socket.close(CloseCode.BadRequest, `Unexpected message of type "${message.type}": only the server sends it`);
            if (message?.type === MessageType.Complete) completedByClient(socket, message.id);
            try {
              await handle(text);
            } catch (error) {
              log.error({ component: 'graphql-ws', error: errorFields(error) }, 'unexpected error in a WebSocket message');
              socket.close(CloseCode.InternalServerError, 'Internal server error');
            }
          }),
      },
      { socket, request },
    );
    socket.once('close', (code, reason) => void closed(code, String(reason)));
  });
  return {
    /** Closes every socket with 1001 "Going away" (graphql-ws completes their subscriptions) and the server. */
    async dispose(): Promise<void> {
      for (const client of wsServer.clients) client.close(1001, 'Going away');
      wsServer.removeAllListeners();
      await new Promise<void>((resolve, reject) => wsServer.close((error) => (error ? reject(error) : resolve())));
    },
  };
}
