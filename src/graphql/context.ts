import type { Principal } from '../domain/principal.js';
import type { PrismaClient } from '../generated/prisma/client.js';
import type { DomainDeps } from '../domain/command.js';
import type { PubSub } from '../realtime/pubsub.js';
import type { Loaders } from './loaders.js';

export interface GraphQLContext {
  /** Null for an anonymous request (only introspection works then). */
  principal: Principal | null;
  /** Why `principal` is null: no token, or what is wrong with the one sent (never the token). */
  authFailure?: string;
  /** Authenticated by the browser's stream session cookie (GET /graphql/stream): subscriptions only. */
  viaStreamSession?: boolean;
  /** Aborted when that stream session signs out on this instance: its SSE stream then ends. */
  signedOut?: AbortSignal;
  deps: DomainDeps;
  /** The Pothos Prisma plugin's client (builder.ts): the relation reads it plans; the domain never uses it. */
  prisma: PrismaClient;
  pubsub: PubSub;
  requestId: string;
  loaders: Loaders;
  /** A worker's lifecycle mutations, by root response key (and index in a batch): the run whose lease each used (audit-access.ts). */
  leasedRuns?: Map<string, string>;
  /** HTTP requests only (SSE reads its Last-Event-ID header). */
  request?: Request;
}
