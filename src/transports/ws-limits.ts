import { GraphQLError } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Context } from 'graphql-ws';
import type { WebSocket } from 'ws';
import type { TokenVerifier } from '../auth/jwt.js';
import type { Config } from '../config.js';
import type { GraphQLContext } from '../graphql/context.js';
import type { Principal } from '../domain/principal.js';
import { at } from '../realtime/timers.js';

type Connection = Context<Record<string, unknown> | undefined, { socket: WebSocket }>;

function limitError(message: string, limit: string, max: number): GraphQLError {
  return new GraphQLError(message, { extensions: { code: 'BAD_USER_INPUT', limit, max } });
}

/** The size of `value` as JSON; undefined when it is nested deeper than JSON.stringify (which recurses) can go. */
function jsonBytes(value: unknown): number | undefined {
  try {
    return Buffer.byteLength(JSON.stringify(value));
  } catch {
    return undefined;
  }
}

/**
 * The graphql-ws connection caps (README "Security model"): connectionParams size, connections
 * per principal, how long a connection without a valid token stays open, and subscriptions per
 * connection and per principal. A connection refused at `connection_init` is closed with a code
 * and reason saying why; a subscription over a cap gets an `error` for it alone, the connection
 * and its other subscriptions keep running. An SSE subscription (one HTTP request) counts
 * against its principal's subscriptions too. Counts are per server instance.
 */
export function webSocketLimits(config: Config, verifier: TokenVerifier) {
  const limits = config.webSocket;
  /** The open, authenticated connections of each principal (`sub`). */
  const connectionsOf = new Map<string, Set<Connection>>();
  const principalOf = new WeakMap<Connection, string>();
  const anonymousTimers = new WeakMap<Connection, NodeJS.Timeout>();
  /** Cancels the close of a connection whose token expires (`at`). */
  const expiryClosers = new WeakMap<Connection, () => void>();
  /** The open sockets that have not presented a valid token (yet). */
  const unauthenticated = new Set<WebSocket>();
  /** Open SSE subscriptions of each principal. */
  const sseOpen = new Map<string, number>();

  function subscriptionsOf(sub: string): number {
    let count = sseOpen.get(sub) ?? 0;
    for (const connection of connectionsOf.get(sub) ?? []) count += Object.keys(connection.subscriptions).length;
    return count;
  }

  const perPrincipalError = () =>
    limitError(
      `A principal may hold at most ${limits.maxSubscriptionsPerPrincipal} subscriptions on this server: complete one first`,
      'WS_MAX_SUBSCRIPTIONS_PER_PRINCIPAL',
      limits.maxSubscriptionsPerPrincipal,
    );

  async function principalOfParams(connectionParams: Record<string, unknown> | undefined): Promise<Principal | null> {
    const authorization = connectionParams?.authorization ?? connectionParams?.Authorization;
    try {
      return await verifier.verify(typeof authorization === 'string' ? authorization : null);
    } catch {
      return null; // each subscription then gets UNAUTHENTICATED
    }
  }

  return {
    /** Open subscriptions of each transport on this instance (GET /metrics). */
    openSubscriptions(): { ws: number; sse: number } {
      let ws = 0;
      for (const open of connectionsOf.values()) for (const connection of open) ws += Object.keys(connection.subscriptions).length;
      let sse = 0;
      for (const count of sseOpen.values()) sse += count;
      return { ws, sse };
    },

    /**
     * A new socket: false when WS_MAX_ANONYMOUS_CONNECTIONS sockets without a valid token are
     * open. Each lives seconds at most (the init and anonymous timeouts); the cap bounds how many.
     */
    admit(socket: WebSocket): boolean {
      if (unauthenticated.size >= limits.maxAnonymousConnections) return false;
      unauthenticated.add(socket);
      socket.once('close', () => unauthenticated.delete(socket));
      return true;
    },

    /** graphql-ws `onConnect`: false refuses the connection (closed here with the reason). */
    async onConnect(ctx: Connection): Promise<boolean> {
      const socket = ctx.extra.socket;
      const paramsBytes = jsonBytes(ctx.connectionParams ?? {});
      if (paramsBytes === undefined) {
        socket.close(4400, 'connectionParams are nested too deep');
        return false;
      }
      if (paramsBytes > limits.maxConnectionParamsBytes) {
        socket.close(4413, `connectionParams exceed ${limits.maxConnectionParamsBytes} bytes`);
        return false;
      }
      const principal = await principalOfParams(ctx.connectionParams);
      if (principal === null) {
        const timer = setTimeout(
          () => socket.close(4401, `Unauthorized: a connection without a valid token closes after ${limits.anonymousTimeoutMs} ms`),
          limits.anonymousTimeoutMs,
        );
        timer.unref();
        anonymousTimers.set(ctx, timer);
        return true;
      }
      unauthenticated.delete(socket);
      const { sub, expiresAtMs } = principal;
      const open = connectionsOf.get(sub) ?? new Set<Connection>();
      if (open.size >= limits.maxConnectionsPerPrincipal) {
        socket.close(4429, `Too many connections for this principal (at most ${limits.maxConnectionsPerPrincipal})`);
        return false;
      }
      open.add(ctx);
      connectionsOf.set(sub, open);
      principalOf.set(ctx, sub);
      // Once its token has expired (its subscriptions ended with TOKEN_EXPIRED), the connection is
      // one without a valid token: closed as those are, which frees its place under the cap.
      if (expiresAtMs !== undefined) {
        expiryClosers.set(
          ctx,
          at(expiresAtMs + limits.anonymousTimeoutMs, () => socket.close(4401, 'Unauthorized: the token of this connection has expired; reconnect with a fresh one')),
        );
      }
      return true;
    },

    /** The principal (`sub`) of an accepted connection with a valid token. */
    principalOf(ctx: Connection): string | undefined {
      return principalOf.get(ctx);
    },

    /** graphql-ws `onClose`. */
    onClose(ctx: Connection): void {
      clearTimeout(anonymousTimers.get(ctx));
      expiryClosers.get(ctx)?.();
      const sub = principalOf.get(ctx);
      const open = sub === undefined ? undefined : connectionsOf.get(sub);
      open?.delete(ctx);
      if (sub !== undefined && open?.size === 0) connectionsOf.delete(sub);
    },

    /** Why a new subscription on `ctx` is refused, or null. graphql-ws already counts it in `ctx.subscriptions`. */
    refusal(ctx: Connection): GraphQLError | null {
      const onConnection = Object.keys(ctx.subscriptions).length;
      if (onConnection > limits.maxSubscriptionsPerConnection) {
        return limitError(
          `A connection may hold at most ${limits.maxSubscriptionsPerConnection} subscriptions: complete one first`,
          'WS_MAX_SUBSCRIPTIONS_PER_CONNECTION',
          limits.maxSubscriptionsPerConnection,
        );
      }
      const sub = principalOf.get(ctx);
      if (sub !== undefined && subscriptionsOf(sub) > limits.maxSubscriptionsPerPrincipal) return perPrincipalError();
      return null;
    },

    /** A yoga plugin counting SSE subscriptions against the same per-principal cap. */
    sse(): Plugin {
      return {
        onSubscribe({ args, setResultAndStopExecution }) {
          const sub = (args.contextValue as unknown as GraphQLContext).principal?.sub;
          if (sub === undefined) return;
          if (subscriptionsOf(sub) + 1 > limits.maxSubscriptionsPerPrincipal) {
            setResultAndStopExecution({ errors: [perPrincipalError()] });
            return;
          }
          sseOpen.set(sub, (sseOpen.get(sub) ?? 0) + 1);
          let released = false;
          const release = () => {
            if (released) return;
            released = true;
            const left = (sseOpen.get(sub) ?? 1) - 1;
            if (left > 0) sseOpen.set(sub, left);
            else sseOpen.delete(sub);
          };
          return {
            onSubscribeResult({ result }) {
              if (!(Symbol.asyncIterator in result)) return void release();
              return { onEnd: release };
            },
            onSubscribeError: release,
          };
        },
      };
    },
  };
}
