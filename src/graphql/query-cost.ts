import { createComplexityRule } from '@pothos/plugin-complexity';
import {
  getNullableType,
  GraphQLError,
  isEnumType,
  isInterfaceType,
  isObjectType,
  isScalarType,
  isSpecifiedScalarType,
  Kind,
  validate,
  type DocumentNode,
  type GraphQLNamedType,
  type GraphQLSchema,
} from 'graphql';
import type { GraphQLParams, Plugin } from 'graphql-yoga';

/** The errors this plugin made: yoga may cache them with the document's validation result. */
const costErrors = new WeakSet<GraphQLError>();

function costError(cost: number, maxCost: number): GraphQLError {
  // Its HTTP status as yoga gives every other validation error (200 for application/json, 400 for
  // application/graphql-response+json): it is added after yoga's own hook has run.
  const error = new GraphQLError(`This operation's cost of ${cost} exceeds the limit of ${maxCost}; ask for smaller lists or fewer nested lists.`, {
    extensions: { code: 'BAD_USER_INPUT', cost, maxCost, http: { status: 400, spec: true } },
  });
  costErrors.add(error);
  return error;
}

/** Built-in scalars and enums: small values, the only ones a cost function may read here. */
function isSmallLeaf(type: GraphQLNamedType | null | undefined): boolean {
  return !!type && (isEnumType(type) || (isScalarType(type) && isSpecifiedScalarType(type)));
}

/**
 * True when every field whose cost depends on its arguments takes only built-in scalars and
 * enums: then an operation's cost depends on its document and those variables alone, never on an
 * input object or a JSON value (a lifecycle event's payload), and can be kept per document and
 * their values.
 */
function costReadsOnlySmallLeaves(schema: GraphQLSchema): boolean {
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type) && !isInterfaceType(type)) continue;
    for (const field of Object.values(type.getFields())) {
      const costOf = (field.extensions as { complexity?: unknown } | undefined)?.complexity;
      if (typeof costOf === 'function' && !field.args.every((arg) => isSmallLeaf(getNullableType(arg.type) as GraphQLNamedType))) return false;
    }
  }
  return true;
}

/** The values of the operation's variables a cost can read (built-in scalars and enums). */
function costVariablesKey(schema: GraphQLSchema, document: DocumentNode, request: GraphQLParams | undefined): string {
  const values: unknown[] = [request?.operationName ?? null];
  for (const definition of document.definitions) {
    if (definition.kind !== Kind.OPERATION_DEFINITION) continue;
    for (const variable of definition.variableDefinitions ?? []) {
      const type = variable.type.kind === Kind.NON_NULL_TYPE ? variable.type.type : variable.type;
      if (type.kind === Kind.NAMED_TYPE && isSmallLeaf(schema.getType(type.name.value))) {
        values.push(request?.variables?.[variable.variable.name.value] ?? null);
      }
    }
  }
  return JSON.stringify(values);
}

/** Per document, the cost errors for the last few sets of its variables' values, if short. */
const MAX_KEYS_PER_DOCUMENT = 64;
const MAX_KEY_LENGTH = 1024;

/**
 * Refuses an operation whose cost exceeds `maxCost` before anything executes. The cost is the
 * number of fields the result could hold: each field counts 1 and a list multiplies what it
 * selects by its bound (the `complexity` each field declares, src/graphql/builder.ts `listCost`),
 * so nesting and aliases count for what they build. It runs as the last step of validation,
 * which queries, mutations and subscriptions (HTTP, SSE and graphql-ws) all pass through. List
 * sizes may come from variables, so yoga's validation cache cannot keep the cost: it is kept here
 * per document and the values of the variables it can read (the same worker mutation is costed
 * once, not on every event), and a cost error yoga kept with the document is dropped.
 */
export function useQueryCostLimit(maxCost: number): Plugin {
  const known = new WeakMap<DocumentNode, Map<string, GraphQLError[]>>();
  let cacheable: boolean | undefined;
  return {
    onValidate({ context, params: { schema, documentAST } }) {
      return ({ result, setResult }) => {
        const standard = result.filter((error) => !costErrors.has(error as GraphQLError));
        if (standard.length) return void (standard.length < result.length && setResult(standard));
        const request = (context as { params?: GraphQLParams }).params;
        cacheable ??= costReadsOnlySmallLeaves(schema);
        const byVariables = cacheable ? known.get(documentAST) ?? new Map<string, GraphQLError[]>() : null;
        const key = byVariables ? costVariablesKey(schema, documentAST, request) : '';
        let errors = byVariables?.get(key);
        if (!errors) {
          // Only the cost is reported here: variables that do not coerce are left to execution,
          // which reports them as it always does.
          const reported = validate(schema, documentAST, [
            createComplexityRule({
              context,
              variableValues: request?.variables ?? {},
              operationName: request?.operationName,
              validate: ({ complexity }, report) => {
                if (complexity > maxCost) report(costError(complexity, maxCost));
              },
            }),
          ]);
          errors = reported.filter((error) => costErrors.has(error));
          // Variables that did not coerce left the cost uncounted: nothing to keep.
          if (byVariables && errors.length === reported.length && key.length <= MAX_KEY_LENGTH) {
            if (byVariables.size >= MAX_KEYS_PER_DOCUMENT) byVariables.clear();
            byVariables.set(key, errors);
            known.set(documentAST, byVariables);
          }
        }
        if (errors.length || standard.length < result.length) setResult(errors);
      };
    },
  };
}
