import SchemaBuilder from '@pothos/core';
import PrismaPlugin from '@pothos/plugin-prisma';
import ScopeAuthPlugin from '@pothos/plugin-scope-auth';
import type { Role } from '../auth/principal.js';
import { forbidden, unauthenticated } from '../domain/errors.js';
import type PrismaTypes from '../generated/pothos-types.js';
import { getDatamodel } from '../generated/pothos-types.js';
import type { GraphQLContext } from './context.js';

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
  plugins: [ScopeAuthPlugin, PrismaPlugin],
  defaultFieldNullability: false,
  scopeAuth: {
    authorizeOnSubscribe: true,
    authScopes: async (context) => ({
      authenticated: context.principal !== null,
      role: (role) => context.principal?.role === role,
    }),
    unauthorizedError: (_parent, context) => (context.principal ? forbidden() : unauthenticated()),
  },
  prisma: {
    client: (context) => context.deps.prisma,
    dmmf: getDatamodel(),
    filterConnectionTotalCount: true,
    onUnusedQuery: null,
  },
});

builder.queryType({});
builder.mutationType({});
builder.subscriptionType({});
