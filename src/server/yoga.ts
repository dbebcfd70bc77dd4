import { randomUUID } from 'node:crypto';
import { EnvelopArmorPlugin } from '@escape.tech/graphql-armor';
import { GraphQLError } from 'graphql';
import { createYoga, type YogaServerInstance } from 'graphql-yoga';
import type { TokenVerifier } from '../auth/jwt.js';
import type { Principal } from '../auth/principal.js';
import type { DomainDeps } from '../domain/command.js';
import { DomainError } from '../domain/errors.js';
import type { GraphQLContext } from '../graphql/context.js';
import { maskError } from '../graphql/errors.js';
import { createLoaders } from '../graphql/loaders.js';
import { schema } from '../graphql/schema/index.js';
import type { PubSub } from '../realtime/pubsub.js';

export interface ServerContext {
  /** HTTP: the Fetch API request. */
  request?: Request;
  /** graphql-ws: the connection's `connectionParams`. */
  connectionParams?: Record<string, unknown>;
}

/** A bad token makes the caller anonymous here; scope auth then answers UNAUTHENTICATED. */
async function principalOf(verifier: TokenVerifier, authorization: unknown): Promise<Principal | null> {
  try {
    return await verifier.verify(typeof authorization === 'string' ? authorization : null);
  } catch (error) {
    if (error instanceof DomainError) return null;
    throw error;
  }
}

export function createGraphQLServer(options: {
  deps: DomainDeps;
  pubsub: PubSub;
  verifier: TokenVerifier;
}): YogaServerInstance<ServerContext, GraphQLContext> {
  return createYoga<ServerContext, GraphQLContext>({
    schema,
    graphqlEndpoint: '/graphql',
    landingPage: false,
    graphiql: { title: 'Agent audit server', subscriptionsProtocol: 'WS' },
    logging: {
      debug: () => {},
      info: () => {},
      warn: (...args: unknown[]) => console.warn(...args),
      // Client errors are answers, not incidents; unexpected failures are logged by maskError.
      error: (...args: unknown[]) => {
        if (!args.some((arg) => arg instanceof DomainError || arg instanceof GraphQLError)) console.error(...args);
      },
    },
    maskedErrors: { maskError: (error) => maskError(error, () => randomUUID()) },
    context: async ({ request, connectionParams }) => ({
      principal: await principalOf(
        options.verifier,
        request?.headers.get('authorization') ?? connectionParams?.authorization ?? connectionParams?.Authorization,
      ),
      deps: options.deps,
      pubsub: options.pubsub,
      requestId: request?.headers.get('x-request-id') ?? randomUUID(),
      loaders: createLoaders(options.deps.prisma),
    }),
    plugins: [
      EnvelopArmorPlugin({
        maxDepth: { n: 10 },
        maxAliases: { n: 15 },
        maxDirectives: { n: 20 },
        maxTokens: { n: 5000 },
        costLimit: { maxCost: 20000 },
        blockFieldSuggestion: { enabled: true },
      }),
    ],
  });
}
