import { createComplexityRule } from '@pothos/plugin-complexity';
import { GraphQLError, validate } from 'graphql';
import type { GraphQLParams, Plugin } from 'graphql-yoga';

/** The errors this plugin made: yoga may cache them with the document's validation result. */
const costErrors = new WeakSet<GraphQLError>();

function costError(cost: number, maxCost: number): GraphQLError {
  const error = new GraphQLError(`This operation's cost of ${cost} exceeds the limit of ${maxCost}; ask for smaller lists or fewer nested lists.`, {
    extensions: { code: 'BAD_USER_INPUT', cost, maxCost },
  });
  costErrors.add(error);
  return error;
}

/**
 * Refuses an operation whose cost exceeds `maxCost` before anything executes. The cost is the
 * number of fields the result could hold: each field counts 1 and a list multiplies what it
 * selects by its bound (the `complexity` each field declares, src/graphql/builder.ts `listCost`),
 * so nesting and aliases count for what they build. It runs as the last step of validation,
 * which queries, mutations and subscriptions (HTTP, SSE and graphql-ws) all pass through. It is
 * computed for every request, since list sizes may come from variables: a cost error that yoga's
 * validation cache kept with the document is dropped and the cost computed again.
 */
export function useQueryCostLimit(maxCost: number): Plugin {
  return {
    onValidate({ context, params: { schema, documentAST } }) {
      return ({ result, setResult }) => {
        const standard = result.filter((error) => !costErrors.has(error as GraphQLError));
        if (standard.length) return void (standard.length < result.length && setResult(standard));
        const request = (context as { params?: GraphQLParams }).params;
        // Only the cost is reported here: variables that do not coerce are left to execution,
        // which reports them as it always does.
        const errors = validate(schema, documentAST, [
          createComplexityRule({
            context,
            variableValues: request?.variables ?? {},
            operationName: request?.operationName,
            validate: ({ complexity }, report) => {
              if (complexity > maxCost) report(costError(complexity, maxCost));
            },
          }),
        ]).filter((error) => costErrors.has(error));
        if (errors.length || standard.length < result.length) setResult(errors);
      };
    },
  };
}
