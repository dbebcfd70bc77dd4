import { createGraphQLError } from 'graphql-yoga';
import { GraphQLError, isValueNode, print } from 'graphql';
import { DomainError, withoutFrames } from '../domain/errors.js';
import type { RunStatus } from '../generated/prisma/enums.js';
import { isDiskFull, isProgramLimit, isUnavailable } from '../db/outage.js';
import { errorFields, log, outsideErrorFields } from '../log.js';
import { dependencyUnavailable } from '../metrics.js';

function originalOf(error: unknown): unknown {
  let current = error;
  while (current instanceof GraphQLError && current.originalError && current.originalError !== current) {
    current = current.originalError;
  }
  return current;
}

/**
 * A client's value as a message quotes it: whole up to `max` characters, else cut there with "…";
 * characters are code points, so an emoji is never cut into a lone surrogate.
 */
export function echoed(value: string, max = 100): string {
  if (value.length <= max) return value;
  const characters = [...value.slice(0, 2 * max + 1)];
  return characters.length <= max ? value : `${characters.slice(0, max).join('')}…`;
}

/**
 * graphql-js's refusal of a variable, `Variable "$input" got invalid value <value>[ at "<path>"]; <reason>`,
 * with the value quoted as echoed() quotes it: graphql-js writes it whole, every key of an object
 * and every character of a string, so a tool input holding a megabyte screenshot came back in the
 * message of its refusal. The reason quotes the value again (`Int cannot represent non-integer
 * value: "…"`, `Value "…" does not exist in "RunStatus" enum.`): each string it quotes is cut too.
 */
export function withInvalidValueCut(error: GraphQLError): string {
  const reason = error.originalError instanceof GraphQLError ? error.originalError.message : undefined;
  const quoted = /^(Variable "\$[^"]+" got invalid value )/.exec(error.message);
  if (!quoted || reason === undefined || !error.message.endsWith(`; ${reason}`)) return error.message;
  const value = error.message.slice(quoted[1]!.length, error.message.length - reason.length - 2);
  const at = / at "[^"]*"$/.exec(value)?.[0] ?? '';
  const reasonCut = reason.replace(/"(?:[^"\\]|\\.){100,}"/g, (string) => `${echoed(string.slice(0, -1))}"`);
  return `${quoted[1]}${echoed(value.slice(0, value.length - at.length))}${at}; ${reasonCut}`;
}

/**
 * graphql-js's refusal of a value written in the document (`Expected value of type "X", found <literal>`,
 * `Int cannot represent non-integer value: <literal>`, …) with the literal quoted as echoed() quotes it:
 * graphql-js prints it whole, so a megabyte string written inline came back whole in the refusal.
 */
export function withLiteralsCut(error: GraphQLError): GraphQLError {
  let message = error.message;
  for (const node of error.nodes ?? []) {
    if (!isValueNode(node)) continue;
    const printed = print(node);
    const cut = echoed(printed);
    if (cut !== printed) message = message.replace(printed, () => cut);
  }
  if (message === error.message) return error;
  return new GraphQLError(message, { nodes: error.nodes, originalError: error.originalError, extensions: error.extensions });
}

/** What an UNAVAILABLE answer's Retry-After says: a short outage (a restart, a failover) is over in seconds. */
export const RETRY_AFTER_SECONDS = 1;

/** What maskError returned: masking it again would change its correlation id. */
const masked = new WeakSet<object>();

/**
 * The one place where failures become what a client sees: a DomainError keeps its message and
 * gets the contract's `extensions.code`; GraphQL's own validation and input errors pass through;
 * a dependency that cannot be reached (or answer in time) for the moment is UNAVAILABLE (HTTP 503, Retry-After);
 * a statement past one of the database's own size limits is BAD_USER_INPUT (the same request fails again);
 * anything else (a bug) is masked and logged with the request id.
 */
export function maskError(error: unknown, requestId: () => string | undefined): Error {
  if (error instanceof Error && masked.has(error)) return error;
  const result = maskOnce(error, requestId);
  masked.add(result);
  return result;
}

function maskOnce(error: unknown, requestId: () => string | undefined): Error {
  const original = originalOf(error);
  const outer = error instanceof GraphQLError ? error : undefined;
  if (original instanceof DomainError) {
    return withoutFrames(() =>
      createGraphQLError(original.message, {
        nodes: outer?.nodes,
        path: outer?.path,
        extensions: { code: original.code, ...(original.runStatus && { runStatus: original.runStatus }) },
      }),
    );
  }
  // A GraphQLError raised on purpose: by graphql-js (parse, validation, variable coercion),
  // by yoga, by GraphQL Armor, or by our scalars.
  if (original instanceof GraphQLError && outer) {
    const code = outer.extensions?.code ?? original.extensions?.code;
    if (typeof code === 'string' && code !== 'INTERNAL_SERVER_ERROR') return outer;
    // graphql-js's own request errors carry no code; those raised while executing (a path) are bugs.
    // A syntax error is a parse failure on every transport, as yoga names it over HTTP.
    if (code === undefined && !outer.path) {
      // A subscription's variables are refused here (a query's and a mutation's in yoga.ts, useVariableErrorsOfGraphqlJs).
      return createGraphQLError(withInvalidValueCut(outer), {
        nodes: outer.nodes,
        extensions: { ...outer.extensions, code: original.source && outer.message.startsWith('Syntax Error:') ? 'GRAPHQL_PARSE_FAILED' : 'BAD_USER_INPUT' },
      });
    }
  }
  const id = requestId() ?? 'unknown';
  if (isProgramLimit(original)) {
    log.warn({ requestId: id, error: { code: '54000' } }, 'a request went past a size limit of the database');
    return createGraphQLError(
      "The request's JSON is too large for the database to handle at once (PostgreSQL's size limit on one jsonb value): send fewer or smaller values",
      { nodes: outer?.nodes, path: outer?.path, extensions: { code: 'BAD_USER_INPUT', requestId: id } },
    );
  }
  if (isUnavailable(original)) {
    dependencyUnavailable.inc({ dependency: 'database' });
    log.warn({ requestId: id, error: outsideErrorFields(original) }, 'database unavailable');
    const why = isDiskFull(original)
      ? 'The database is out of disk space: nothing was written. Retry with backoff once space is freed.'
      : 'The database cannot be reached, or did not answer in time, for the moment. Retry with backoff.';
    return createGraphQLError(why, {
      nodes: outer?.nodes,
      path: outer?.path,
      extensions: { code: 'UNAVAILABLE', requestId: id, http: { status: 503, headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) } } },
    });
  }
  log.error({ requestId: id, error: errorFields(original) }, 'unexpected error');
  return createGraphQLError('Unexpected error.', {
    nodes: outer?.nodes,
    path: outer?.path,
    extensions: { code: 'INTERNAL_SERVER_ERROR', requestId: id },
  });
}

/**
 * A batch event's refusal (`LifecycleEventError`): the code, message and run status its own
 * mutation would have answered, by the same mapping as every other error.
 */
export function eventError(error: unknown, requestId: () => string | undefined): EventError {
  const result = maskError(error, requestId);
  const { code, runStatus } = result instanceof GraphQLError ? result.extensions : {};
  return {
    code: typeof code === 'string' ? code : 'INTERNAL_SERVER_ERROR',
    message: result.message,
    ...(typeof runStatus === 'string' && { runStatus: runStatus as RunStatus }),
  };
}

export interface EventError {
  code: string;
  message: string;
  runStatus?: RunStatus;
}
