import type { Principal } from '../auth/principal.js';
import type { DomainDeps } from '../domain/command.js';
import type { PubSub } from '../realtime/pubsub.js';
import type { Loaders } from './loaders.js';

export interface GraphQLContext {
  /** Null for an anonymous request (only introspection works then). */
  principal: Principal | null;
  deps: DomainDeps;
  pubsub: PubSub;
  requestId: string;
  loaders: Loaders;
  /** A worker's lifecycle mutations, by root response key: the run whose lease each used (audit-access.ts). */
  leasedRuns?: Map<string | number, string>;
  /** HTTP requests only (SSE reads its Last-Event-ID header). */
  request?: Request;
}
