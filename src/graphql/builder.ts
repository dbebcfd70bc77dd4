import SchemaBuilder from '@pothos/core';
import ComplexityPlugin from '@pothos/plugin-complexity';
import PrismaPlugin from '@pothos/plugin-prisma';
import ScopeAuthPlugin, { type AuthFailure } from '@pothos/plugin-scope-auth';
import { getNamedType } from 'graphql';
import type { Role } from '../domain/principal.js';
import { forbidden, unauthenticated } from '../domain/errors.js';
import type PrismaTypes from '../generated/pothos-types.js';
import { getDatamodel } from '../generated/pothos-types.js';
import type { GraphQLContext } from './context.js';

/** What an unbounded list counts for in a query's cost (lists whose size the client cannot choose). */
const DEFAULT_LIST_COST = 100;

/** The cost of a list field that holds at most `size` items. */
export const listCost = (size: number | null | undefined, max: number) => ({
  field: 1,
  multiplier: Math.min(Math.max(size ?? max, 0), max),
});

/** The role a refused field asked for (`authScopes: { role }`), if that is why it was refused. */
function missingRole(failure: AuthFailure): unknown {
  if (failure.kind === 'AuthScope') return failure.scope === 'role' ? failure.parameter : undefined;
  if (failure.kind === 'AnyAuthScopes' || failure.kind === 'AllAuthScopes') return failure.failures.map(missingRole).find(Boolean);
  return undefined;
}

export const builder = new SchemaBuilder<{
  Context: GraphQLContext;
  PrismaTypes: PrismaTypes;
  Scalars: {
    DateTime: { Input: Date; Output: Date | string };
    JSON: { Input: unknown; Output: unknown };
    BigInt: { Input: bigint; Output: bigint | number | string };
    ID: { Input: string; Output: string };
  };
  AuthScopes: {
    authenticated: boolean;
    role: Role;
  };
  DefaultFieldNullability: false;
}>({
  plugins: [ScopeAuthPlugin, PrismaPlugin, ComplexityPlugin],
  defaultFieldNullability: false,
  scopeAuth: {
    authorizeOnSubscribe: true,
    authScopes: async (context) => ({
      authenticated: context.principal !== null,
      role: (role) => context.principal?.role === role,
    }),
    unauthorizedError: (_parent, context, info, result) => {
      if (!context.principal) return unauthenticated(context.authFailure);
      const role = missingRole(result.failure);
      if (role) return forbidden(`Only a ${String(role)} token may call ${info.fieldName} (this token's role is ${context.principal.role})`);
      // A field of a worker's lifecycle result is resolved once the write is done (schema/audit-access.ts).
      if (context.principal.role === 'worker' && info.operation.operation === 'mutation') {
        return forbidden(
          `${info.parentType.name}.${info.fieldName} is beyond a worker's reach: a lifecycle result reaches only the run whose lease it used, ` +
            'with its tool calls and audits. The event itself was recorded: send it again without this field to read its result (a replay).',
        );
      }
      const type = getNamedType(info.returnType).name;
      if (type === 'ModelAudit' || type === 'ToolAudit') {
        return forbidden(`${info.parentType.name}.${info.fieldName} is audit data, for super administrators on their own threads only (docs/semantics.md, "Principals")`);
      }
      return forbidden(`${info.parentType.name}.${info.fieldName} is not for this token (docs/semantics.md, "Principals")`);
    },
  },
  // Each field costs 1 and a list multiplies its selection by its size; fields declare their
  // bound (`listCost`). The limit itself is enforced before execution (src/graphql/query-cost.ts).
  complexity: { defaultComplexity: 1, defaultListMultiplier: DEFAULT_LIST_COST },
  prisma: {
    client: (context) => context.prisma,
    dmmf: getDatamodel(),
    filterConnectionTotalCount: true,
    onUnusedQuery: null,
  },
});

builder.queryType({
  description: 'Reads. Every operation but introspection needs a bearer token; who may read what: docs/semantics.md, "Principals".',
});
builder.mutationType({ description: 'Writes. A failed mutation changes nothing (a batch refuses events one by one: recordEvents).' });
builder.subscriptionType({
  description: 'Live streams over graphql-ws or SSE. Each event is published after its change commits; access is checked when the stream starts.',
});
