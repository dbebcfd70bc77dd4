import type { Server } from 'node:http';
import { getOperationAST, GraphQLError, parse, type DocumentNode, type ExecutionArgs } from 'graphql';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Config } from '../config.js';
import { maskError } from '../graphql/errors.js';
import { operationResolutionError } from '../graphql/operation-resolution.js';
import { keepConnectionsAlive } from '../transports/keep-alive.js';
import { isSharedStream, sharedSubscriptions } from '../transports/shared-subscriptions.js';
import type { UnsentBudget } from '../transports/unsent-budget.js';
import { boundedWebSocket, closeAsSlowConsumer, maxUnsentBytes, PER_MESSAGE_DEFLATE, rememberTcpSockets, writtenBySubscription } from '../transports/websocket.js';
import type { webSocketLimits } from '../transports/ws-limits.js';
import { serveGraphQLWs } from '../transports/ws-server.js';
import { bodyLimit } from './http-server.js';
import { countUnrun } from './metrics.js';
import { compilable, MAX_DOCUMENT_TOKENS, type GraphQLServer } from './yoga.js';

/** A refused document's operation, for /metrics: its own parse, as the refusal comes before yoga's, within yoga's token limit. */
const parsedOrNot = (query: string): DocumentNode | undefined => {
  try {
    return parse(query, { noLocation: true, maxTokens: MAX_DOCUMENT_TOKENS });
  } catch {
    return undefined;
  }
};

/** The `http` extension is yoga's, for HTTP status codes: not part of a graphql-ws frame. */
const withoutHttp = ({ message, nodes, extensions: { http: _http, ...extensions } }: GraphQLError) => new GraphQLError(message, { nodes, extensions });

/**
 * A signal for each operation of a socket, which aborts when the client completes the operation or
 * the socket closes: a query nobody waits for any more gives up its database work as one over HTTP
 * does (src/server/yoga.ts, useReadsCancelledForClientsGone).
 */
function operationSignals() {
  const bySocket = new WeakMap<WebSocket, Map<string, AbortController>>();
  return {
    opened(socket: WebSocket, id: string): AbortSignal {
      const controller = new AbortController();
      const operations = bySocket.get(socket) ?? new Map<string, AbortController>();
      bySocket.set(socket, operations.set(id, controller));
      return controller.signal;
    },
    /** Its operation has ended (answered, failed or completed): nothing waits for its signal. */
    ended(socket: WebSocket, id: string): void {
      bySocket.get(socket)?.delete(id);
    },
    /** The client completed operation `id`, or closed the socket (every operation of it). */
    gone(socket: WebSocket, id?: string): void {
      const operations = bySocket.get(socket);
      for (const [each, controller] of operations ?? []) {
        if (id !== undefined && each !== id) continue;
        controller.abort();
        operations!.delete(each);
      }
    },
  };
}

/**
 * graphql-ws on the HTTP server's GraphQL path. Every operation goes through yoga's envelop
 * (context, parsing, validation and its limits), so auth and limits apply to it too.
 * Subscriptions execute each event once per group of identical subscriptions
 * (src/transports/shared-subscriptions.ts), masked as yoga masks its results, and write their
 * frames themselves (src/transports/websocket.ts); graphql-ws starts and completes them.
 */
export function serveGraphQLOverWebSocket(
  server: Server,
  yoga: GraphQLServer,
  config: Config,
  limits: ReturnType<typeof webSocketLimits>,
  /** What each principal's connections and SSE streams together may hold unsent. */
  budget: UnsentBudget,
) {
  const wsServer = new WebSocketServer({
    server,
    path: yoga.graphqlEndpoint,
    maxPayload: bodyLimit(config),
    perMessageDeflate: PER_MESSAGE_DEFLATE,
    WebSocket: boundedWebSocket(maxUnsentBytes(config), budget),
  });
  const shared = sharedSubscriptions((error, context) => maskError(error, () => context.requestId) as GraphQLError, compilable);
  /** Each operation's executor from yoga's envelop (its plugins: masking, graphql-jit), by the args graphql-ws passes back. */
  const executors = new WeakMap<ExecutionArgs, ReturnType<typeof yoga.getEnveloped>['execute']>();
  const signals = operationSignals();
  const served = serveGraphQLWs(
    {
      connectionInitWaitTimeout: config.webSocket.initTimeoutMs,
      onConnect: async (ctx) => {
        if (!(await limits.onConnect(ctx))) return false;
        const sub = limits.principalOf(ctx);
        const socket = ctx.extra.socket;
        if (sub === undefined || socket.readyState !== socket.OPEN) return true;
        const release = budget.track(socket, sub, { transport: 'ws', unsent: () => socket.bufferedAmount, end: () => closeAsSlowConsumer(socket) });
        socket.once('close', release);
        ctx.extra.request.socket.on('drain', () => budget.drained(socket));
        return true;
      },
      onClose: (ctx) => {
        limits.onClose(ctx);
        signals.gone(ctx.extra.socket);
      },
      onComplete: (ctx, id) => signals.ended(ctx.extra.socket, id),
      onError: (ctx, id) => void signals.ended(ctx.extra.socket, id),
      execute: (args) => executors.get(args)!(args),
      subscribe: (args) => shared.start(args),
      // The subscription's socket comes from graphql-ws's context: it writes its own frames, on
      // the connection under it (the upgraded request's socket) corked for the turn.
      onOperation: (ctx, id, _payload, _args, result) =>
        isSharedStream(result) ? writtenBySubscription(result, ctx.extra.socket, id, ctx.extra.request.socket) : undefined,
      onSubscribe: async (ctx, id, params) => {
        // A document that never runs is counted in /metrics as yoga's plugin counts it over HTTP.
        const counted = (document: DocumentNode | undefined, errors: GraphQLError[]) => {
          countUnrun(document, params.operationName, errors);
          return errors;
        };
        const refused = limits.refusal(ctx);
        if (refused) return counted(parsedOrNot(params.query), [refused]);
        const { schema, execute, contextFactory, parse, validate } = yoga.getEnveloped({
          ...ctx,
          connectionParams: ctx.connectionParams,
          req: ctx.extra.request,
          socket: ctx.extra.socket,
          params,
          operationSignal: signals.opened(ctx.extra.socket, id),
        });
        let document;
        try {
          document = parse(params.query);
        } catch (error) {
          // A syntax error answers this subscription alone (graphql-ws would close the socket).
          if (error instanceof GraphQLError) return counted(undefined, [withoutHttp(maskError(error, () => undefined) as GraphQLError)]);
          throw error;
        }
        const args: ExecutionArgs = {
          schema,
          operationName: params.operationName,
          document,
          variableValues: params.variables,
          contextValue: await contextFactory(),
        };
        const errors = validate(args.schema, args.document);
        if (errors.length) return counted(document, errors.map(withoutHttp));
        // graphql-ws's own answer to this ("Unable to identify operation") carries no code: the one given over HTTP.
        if (!getOperationAST(document, params.operationName)) return counted(document, [operationResolutionError(document, params.operationName)]);
        executors.set(args, execute);
        return args;
      },
    },
    wsServer,
    (socket) => limits.admit(socket),
    (socket, id) => signals.gone(socket, id),
  );
  rememberTcpSockets(wsServer);
  // Pings are sent by keepConnectionsAlive, spread over the period.
  keepConnectionsAlive(wsServer);
  return {
    wsServer,
    /** Completes every subscription and closes every socket with graphql-ws's close code. */
    dispose: () => served.dispose(),
  };
}
