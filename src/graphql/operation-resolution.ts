import { GraphQLError, Kind, parse, type DocumentNode, type OperationDefinitionNode } from 'graphql';
import { echoed } from './errors.js';

/**
 * OPERATION_RESOLUTION_FAILURE saying which operations the document holds, so a misspelt
 * operationName shows the right one (yoga's and graphql-ws's own message named none).
 */
export function operationResolutionError(document: DocumentNode, operationName: string | null | undefined): GraphQLError {
  const operations = document.definitions.filter((definition): definition is OperationDefinitionNode => definition.kind === Kind.OPERATION_DEFINITION);
  const names = operations.map((operation) => (operation.name ? `"${operation.name.value}"` : `an anonymous ${operation.operation}`)).join(', ');
  const message = !operations.length
    ? 'The document holds no operation (only fragments): add a query, mutation or subscription'
    : operationName
      ? `The document holds no operation named "${echoed(operationName, 64)}" (it holds ${names}): send one of those names as operationName`
      : `The document holds ${operations.length} operations (${names}): send the one to run as operationName`;
  return new GraphQLError(message, { extensions: { code: 'OPERATION_RESOLUTION_FAILURE' } });
}

/** The same, from the request's text (yoga reports the failure without its document). */
export function operationResolutionErrorOf(query: string, operationName: string | null | undefined): GraphQLError | undefined {
  try {
    return operationResolutionError(parse(query, { noLocation: true }), operationName);
  } catch {
    return undefined;
  }
}
