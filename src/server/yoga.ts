import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { EnvelopArmorPlugin } from '@escape.tech/graphql-armor';
import { useGraphQlJit } from '@envelop/graphql-jit';
import {
  getNamedType,
  getNullableType,
  getOperationAST,
  getVariableValues,
  GraphQLError,
  isInputObjectType,
  isListType,
  isNonNullType,
  Kind,
  typeFromAST,
  type DocumentNode,
  type ExecutionArgs,
  type GraphQLInputObjectType,
  type GraphQLInputType,
  type GraphQLNamedType,
  type GraphQLSchema,
  type ValidationContext,
} from 'graphql';
import { createYoga, type FetchAPI, type GraphQLParams, type Plugin, type YogaServerInstance } from 'graphql-yoga';
import type { TokenVerifier } from '../auth/jwt.js';
import type { PrismaClient } from '../generated/prisma/client.js';
import type { DomainDeps } from '../domain/command.js';
import { DomainError } from '../domain/errors.js';
import { useAnswerPayloadLimit } from '../graphql/answer-payloads.js';
import type { GraphQLContext } from '../graphql/context.js';
import { echoed, maskError, withInvalidValueCut, withLiteralsCut } from '../graphql/errors.js';
import { createLoaders } from '../graphql/loaders.js';
import { schema } from '../graphql/schema/index.js';
import type { PubSub } from '../realtime/pubsub.js';
import { sharedSubscriptions } from '../transports/shared-subscriptions.js';
import { customScalarLiterals } from '../graphql/inline-scalars.js';
import { useDocumentNestingLimit } from '../graphql/document-nesting.js';
import { useQueryCostLimit } from '../graphql/query-cost.js';
import { operationResolutionErrorOf } from '../graphql/operation-resolution.js';
import { useReadsPerRequestLimit } from '../graphql/search-limits.js';
import { useSseEventIds } from '../transports/sse-event-ids.js';
import type { UnsentBudget } from '../transports/unsent-budget.js';
import { EXPOSED_HEADERS, isAllowedOrigin } from './cors.js';
import { DocumentCache, useErrorsWithoutTheirRequests } from './document-cache.js';
import { graphiqlWithPolicy } from './page-security.js';
import type { StreamSession } from './stream-session.js';
import { errorFields, log } from '../log.js';
import { whileWaitedFor } from '../db/reads-waited-for.js';

/** The most tokens a document may have (GraphQL Armor's maxTokens): refused while it is parsed. */
export const MAX_DOCUMENT_TOKENS = 5000;

export interface ServerContext {
  /** HTTP: the Fetch API request. */
  request?: Request;
  /** HTTP on Node: the response, which yoga's Node adapter puts in the server context. */
  res?: ServerResponse;
  /** graphql-ws: the connection's `connectionParams`. */
  connectionParams?: Record<string, unknown>;
  /** graphql-ws: aborts when the client completes the operation or closes the connection (src/server/graphql-ws.ts). */
  operationSignal?: AbortSignal;
  /** GET /graphql/stream: the browser's stream session (src/server/stream-session.ts), not a bearer token. */
  streamSession?: StreamSession;
}

/** Why a request without a principal is UNAUTHENTICATED when it sent no token at all. */
const NO_TOKEN = 'No Authorization header (over graphql-ws: no connectionParams.authorization): send "Bearer <JWT>"';

/**
 * A bad token makes the caller anonymous here, with the reason kept; scope auth then answers
 * UNAUTHENTICATED with that reason.
 */
async function authenticate(verifier: TokenVerifier, authorization: unknown): Promise<Pick<GraphQLContext, 'principal' | 'authFailure'>> {
  try {
    const principal = await verifier.verify(typeof authorization === 'string' ? authorization : null);
    return principal ? { principal } : { principal: null, authFailure: NO_TOKEN };
  } catch (error) {
    if (error instanceof DomainError) return { principal: null, authFailure: error.message };
    throw error;
  }
}

function bodyError(message: string, status: number, code: string): GraphQLError {
  return new GraphQLError(message, { extensions: { http: { status }, code } });
}

/** The one answer to a body over the limit, whether it had a Content-Length or came chunked. */
export const bodyTooLarge = (limit: number) => ({
  status: 413,
  message: `Request body exceeds ${limit} bytes`,
  code: 'BAD_USER_INPUT',
});
/**
 * How large a body over the limit may be and still be read to its end (and thrown away) before
 * the 413 goes out. A client that sends its whole body before it reads the answer (Python's
 * urllib, most blocking clients) sees a connection closed on unread bytes as a reset (EPIPE,
 * ECONNRESET), not as the 413, and would retry it as a transport failure. Larger bodies are cut.
 */
export const drainedBodyLimit = (limit: number) => 4 * limit;
const bodyTooLargeError = (limit: number) => {
  const { message, status, code } = bodyTooLarge(limit);
  return bodyError(message, status, code);
};

/** A client's `x-request-id` becomes the correlation id only when it cannot forge a log line. */
const SAFE_REQUEST_ID = /^[A-Za-z0-9_-]{1,128}$/;
export function requestIdOf(given: string | string[] | null | undefined): string {
  return typeof given === 'string' && SAFE_REQUEST_ID.test(given) ? given : randomUUID();
}

/**
 * `request` with its body counted as it streams, failing past `limit` bytes (as yoga does). A body
 * cut past drainedBodyLimit calls `cut`: the rest is never read.
 */
function counted(request: Request, limit: number, fetchAPI: FetchAPI, cut: () => void): Request {
  const body = request.body;
  if (!body) return request;
  // A native stream needs the native TransformStream (graphql-yoga#4583).
  const Transform = body instanceof ReadableStream ? globalThis.TransformStream : fetchAPI.TransformStream;
  let bytes = 0;
  const limited = body.pipeThrough(
    new Transform<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        bytes += chunk.byteLength;
        if (bytes <= limit) controller.enqueue(chunk);
        else if (bytes > drainedBodyLimit(limit)) {
          cut();
          controller.error(bodyTooLargeError(limit));
        }
        // Else read on to the end, thrown away, so that the 413 reaches the client (drainedBodyLimit).
      },
      flush(controller) {
        if (bytes > limit) controller.error(bodyTooLargeError(limit));
      },
    }),
  );
  const init = { method: request.method, headers: request.headers, signal: request.signal, body: limited, duplex: 'half' };
  return new fetchAPI.Request(request.url, init as RequestInit);
}

/**
 * yoga's body limit, without its cost on sized requests: yoga pipes every body through a
 * TransformStream and rebuilds the Request (≈0.1 ms of CPU per request). A valid Content-Length
 * within the limit needs no counting, since Node's HTTP parser delivers exactly that many bytes;
 * only bodies without one (chunked) are counted as they stream.
 */
function useBodyLimit(limit: number): Plugin<Record<string, unknown>, ServerContext> {
  return {
    onRequestParse({ request, requestParser, setRequestParser, fetchAPI, serverContext }) {
      const length = request.headers.get('content-length');
      if (length !== null) {
        if (!/^\d+$/.test(length)) throw bodyError('Content-Length header is invalid.', 400, 'BAD_REQUEST');
        if (Number(length) > limit) throw bodyTooLargeError(limit);
        return;
      }
      if (!requestParser || !request.body) return;
      // The connection closes after the 413: kept alive, Node would read the rest of the body to reach the next request.
      const closeAfterAnswer = () => serverContext.res?.setHeader('connection', 'close');
      setRequestParser((req) => requestParser(counted(req, limit, fetchAPI, closeAfterAnswer)));
    },
  };
}

const utf8 = new TextDecoder('utf-8', { fatal: true });
const notUtf8 = () => bodyError('The request is not valid UTF-8: send its text (and the bytes it %-escapes) encoded as UTF-8', 400, 'BAD_REQUEST');

/** Throws notUtf8 when the bytes `text`'s %XX escapes stand for (a form's or a query string's) are not UTF-8. */
function checkEscapes(text: string) {
  if (!text.includes('%')) return;
  try {
    // A "%" without two hex digits is itself, as URLSearchParams reads it.
    decodeURIComponent(text.replace(/%(?![0-9A-Fa-f]{2})/g, '%25'));
  } catch {
    throw notUtf8();
  }
}

/** A request's body as text, refused (400 BAD_REQUEST) unless it is UTF-8; a failed read (the body limit's 413) as it failed. */
async function utf8TextOf(request: Request): Promise<string> {
  const body = await request.arrayBuffer();
  try {
    return utf8.decode(body);
  } catch {
    throw notUtf8();
  }
}

/**
 * `request` whose text(), json() and formData() refuse a body that is not UTF-8 (utf8TextOf): a
 * multipart body as a whole, since this API takes no files, only the JSON of its fields.
 */
function withUtf8Text(request: Request, fetchAPI: FetchAPI): Request {
  const text = () => utf8TextOf(request);
  const json = async () => JSON.parse(await text()) as unknown;
  const formData = async () => new fetchAPI.Response(await text(), { headers: { 'content-type': request.headers.get('content-type')! } }).formData();
  return new Proxy(request, {
    get(target, key) {
      if (key === 'text') return text;
      if (key === 'json') return json;
      if (key === 'formData') return formData;
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** A request's media type, without its parameters ('' for none). */
const mediaTypeOf = (request: Request) => request.headers.get('content-type')?.split(';')[0]?.trim() ?? '';

/** The media types whose bodies yoga's parsers read as text (a form's: useNotAGraphQLRequestAnswers). */
const TEXT_BODIES = new Set(['application/json', 'application/graphql+json', 'application/graphql', 'multipart/form-data']);

/**
 * A request's text is read as UTF-8 or refused (400 BAD_REQUEST), as GraphQL over HTTP and JSON
 * (RFC 8259 §8.1) want it. yoga reads it leniently: each byte that is not UTF-8 (a Latin-1 "é",
 * an overlong "/", an encoded lone surrogate) became U+FFFD, and a title or payload was stored as
 * text its client never sent. Before useBodyLimit, so that this reads the body as counted. A
 * form's body and %-escapes, and a GET's, are read by useNotAGraphQLRequestAnswers (paramsOf).
 */
function useUtf8Bodies(): Plugin {
  return {
    onRequestParse({ request, requestParser, setRequestParser, fetchAPI }) {
      const mediaType = mediaTypeOf(request);
      if (request.method !== 'POST' || !requestParser || !TEXT_BODIES.has(mediaType)) return;
      setRequestParser((req) => requestParser(withUtf8Text(req, fetchAPI)));
    },
  };
}

/** The answer to a multipart form that carries no operation this server can run. */
const notAnOperationForm = (why: string) =>
  bodyError(`${why}: a multipart form carries the operation as JSON in its "operations" field, {"query": ..., "variables": ...}, and this server takes no files`, 400, 'BAD_REQUEST');

/** A multipart form's text field as the JSON it holds (undefined when the form has none), refused when it is a file or no JSON. */
function jsonField(form: FormData, name: string): unknown {
  const value = form.get(name);
  if (value === null) return undefined;
  if (typeof value !== 'string') throw notAnOperationForm(`The multipart form's "${name}" field is a file`);
  try {
    return JSON.parse(value) as unknown;
  } catch (error) {
    throw notJson(`The multipart form's "${name}" field`, error as Error);
  }
}

/**
 * A multipart form's operation (the GraphQL multipart request spec's "operations" field), refused
 * (400 BAD_REQUEST) unless it is one: yoga's parser answered a form without one 200 with no code of
 * the contract's, ran into TypeErrors (500) on a "map" that is no object of lists or "operations"
 * that are no object, and put a file the map named (or null, for one not sent) into the variables
 * and ran the operation. No field of this schema takes a file, so a "map" names none.
 */
async function operationsOfForm(request: Request): Promise<GraphQLParams | GraphQLParams[]> {
  let form: FormData;
  try {
    form = await request.formData();
  } catch (error) {
    // Ours as they are (the body limit's 413, a body that is not UTF-8); the form parser's as the malformed body they name.
    if (error instanceof GraphQLError) throw error;
    const message = (error as Error).message;
    // The form parser's (busboy's) own limit on one field, 1 MiB, below the body limit; its message says "undefined bytes".
    if (message.startsWith('Field value size exceeded')) {
      throw bodyError('A field of the multipart form is over 1 MiB, the most one field may hold: send a larger operation as application/json', 413, 'BAD_USER_INPUT');
    }
    throw notAnOperationForm(`The multipart body is malformed (${echoed(message)})`);
  }
  const operations = jsonField(form, 'operations');
  if (operations === undefined) throw notAnOperationForm('The multipart form has no "operations" field');
  if (typeof operations !== 'object' || operations === null) throw notAnOperationForm('The multipart form\'s "operations" field is JSON but no object');
  const map = jsonField(form, 'map');
  if (map !== undefined && (typeof map !== 'object' || map === null || Array.isArray(map))) throw notAnOperationForm('The multipart form\'s "map" field is JSON but no object');
  if (map && Object.keys(map).length > 0) throw notAnOperationForm('The multipart form\'s "map" names files');
  if ([...form.values()].some((value) => typeof value !== 'string')) throw notAnOperationForm('The multipart form holds a file');
  // What the form carries is checked as a JSON body's is: a query string, variables an object, no batch.
  return operations as GraphQLParams | GraphQLParams[];
}

/** Multipart forms are read by operationsOfForm; before useUtf8Bodies, which makes its text UTF-8 or refused. */
function useOperationForms(): Plugin {
  return {
    onRequestParse({ request, setRequestParser }) {
      if (request.method === 'POST' && mediaTypeOf(request) === 'multipart/form-data') setRequestParser(operationsOfForm);
    },
  };
}

/**
 * Subscriptions over HTTP (SSE) execute each event once per group of identical subscriptions, as
 * graphql-ws's do (src/transports/shared-subscriptions.ts). yoga masks their results afterwards, so
 * the group leaves errors as they are.
 */
function useSharedSubscriptions(): Plugin {
  const { subscribe } = sharedSubscriptions((error) => error, compilable);
  return {
    onSubscribe({ setSubscribeFn }) {
      setSubscribeFn(subscribe as Parameters<typeof setSubscribeFn>[0]);
    },
  };
}

/**
 * Whether an SSE request's client has gone: its connection ended. Its signal aborts only once the
 * socket has closed, a turn later; over yoga's fetch (tests) there is no socket, only the signal.
 */
function clientGone({ request, res }: ServerContext): boolean {
  return request?.signal.aborted === true || (res !== undefined && (!res.socket || res.socket.readableEnded));
}

/**
 * An SSE subscription whose client has gone is not started. When many dashboards reconnect at once
 * (a proxy restart, laptops waking up), the server reads each request and the end of its connection
 * (its client gave up while it waited) together, the end a turn of the event loop after the request,
 * which it would have run to its first read by then. So a subscription starts two turns after its
 * request, once the end of its connection would have been seen: those that gave up cost no reads
 * (the thread, the stream's start, the first view) on a server busiest exactly then. Nobody reads
 * the answer: it says nothing, and counts as no failure. graphql-ws subscriptions have no request:
 * their connection's close completes them.
 */
function useNoSubscriptionsForClientsGone(): Plugin {
  const twoTurns = () => new Promise<void>((resolve) => setImmediate(() => setImmediate(resolve)));
  return {
    async onSubscribe({ args, setResultAndStopExecution }) {
      const context = args.contextValue as ServerContext;
      if (!context.request) return;
      await twoTurns();
      if (clientGone(context)) setResultAndStopExecution({ data: null });
    },
  };
}

/** Aborts when nobody waits for the operation any more: over HTTP its request's client went; over graphql-ws the client completed it or closed the connection. */
const clientSignal = ({ request, operationSignal }: ServerContext): AbortSignal | undefined => request?.signal ?? operationSignal;

/** A query whose client goes while it runs gives up its database work (src/db/reads-waited-for.ts). */
function useReadsCancelledForClientsGone(): Plugin {
  return {
    onExecute({ args, executeFn, setExecuteFn }) {
      const signal = clientSignal(args.contextValue as ServerContext);
      if (!signal || getOperationAST(args.document, args.operationName)?.operation !== 'query') return;
      setExecuteFn((executeArgs) => whileWaitedFor(signal, async () => executeFn(executeArgs)));
    },
  };
}

/**
 * Execution errors masked with the request's correlation id (yoga's own masking, which comes
 * after and leaves them as they are, has no access to the context).
 */
function useCorrelatedMasking(): Plugin {
  return {
    onExecute({ args }) {
      const context = args.contextValue as unknown as GraphQLContext;
      const query = getOperationAST(args.document, args.operationName)?.operation === 'query';
      return {
        onExecuteDone({ result, setResult }) {
          if (Symbol.asyncIterator in result || !result.errors) return;
          // Nobody reads it: the errors of a query whose client has gone are its statements cancelled (useReadsCancelledForClientsGone), not incidents.
          if (query && clientSignal(args.contextValue as ServerContext)?.aborted) return setResult({ data: null });
          setResult({ ...result, errors: result.errors.map((error) => maskError(error, () => context.requestId) as GraphQLError) });
        },
      };
    },
  };
}

const writesCustomScalarInline = customScalarLiterals(schema);

/**
 * The documents that run compiled by graphql-jit: not those that write a custom scalar inline
 * (inline-scalars.ts), nor those with more than one operation (a compiled operation is cached per
 * document, whichever operationName came first).
 */
export const compilable = (document: DocumentNode) =>
  !writesCustomScalarInline(document) && document.definitions.filter((definition) => definition.kind === Kind.OPERATION_DEFINITION).length === 1;

/**
 * GraphQL Armor's rejections, worded as the limits they are (Armor prefixes them "Syntax Error: ")
 * and reported as validation errors.
 */
function armorLimit(describe: (found: string) => string) {
  return {
    propagateOnRejection: false,
    onReject: [
      (context: ValidationContext | null, error: GraphQLError) =>
        context?.reportError(new GraphQLError(describe(/found (\d+)/.exec(error.message)?.[1] ?? 'more'), { extensions: { code: 'BAD_USER_INPUT' } })),
    ],
  };
}

/**
 * graphql-jit names a nested input field as if it were a variable (`Variable "$sequence"` for a
 * query whose variable is `$i`). When a compiled operation refuses its variables, they are coerced
 * again by graphql-js, whose errors name the client's own variable and the path inside it. Only
 * the failure path pays for it.
 */
function useVariableErrorsOfGraphqlJs(): Plugin {
  return {
    onExecute({ args }) {
      return {
        onExecuteDone({ result, setResult }) {
          if (Symbol.asyncIterator in result || !result.errors || 'data' in result) return;
          const operation = getOperationAST(args.document, args.operationName);
          if (!operation?.variableDefinitions?.length) return;
          const coerced = getVariableValues(args.schema, operation.variableDefinitions, args.variableValues ?? {});
          if (!coerced.errors) return;
          // 400 for application/graphql-response+json, 200 for application/json (GraphQL over HTTP).
          const http = { status: 400, spec: true };
          setResult({
            errors: coerced.errors.map((error) => new GraphQLError(withInvalidValueCut(error), { nodes: error.nodes, extensions: { code: 'BAD_USER_INPUT', http } })),
          });
        },
      };
    },
  };
}

/**
 * The input object types a list may stand for, and those whose values may hold one at any depth.
 * GraphQL coerces only an object to an input object, but graphql-js and graphql-jit take a list
 * for one whose fields are all optional (a list lacks every required one): `createThread(input: [])`
 * created an untitled thread. Worked out once per schema, so that a request walks only the
 * variables, and the parts of them, where such a list can be.
 */
const listableBySchema = new WeakMap<GraphQLSchema, Map<GraphQLNamedType, [string, GraphQLInputType][]>>();
/** Those types, each with the fields of its own that are among them (the walk goes into no other). */
function listableTypes(schema: GraphQLSchema): Map<GraphQLNamedType, [string, GraphQLInputType][]> {
  let listable = listableBySchema.get(schema);
  if (listable) return listable;
  const found = new Set<GraphQLNamedType>();
  const inputs = Object.values(schema.getTypeMap()).filter(isInputObjectType);
  // Until nothing more is found: input types may hold one another, round and round.
  for (let grew = true; grew; ) {
    grew = false;
    for (const type of inputs) {
      const fields = Object.values(type.getFields());
      const allOptional = fields.every((field) => !isNonNullType(field.type) || field.defaultValue !== undefined);
      if (!found.has(type) && (allOptional || fields.some((field) => found.has(getNamedType(field.type))))) {
        found.add(type);
        grew = true;
      }
    }
  }
  const walked = (type: GraphQLInputObjectType) => Object.values(type.getFields()).filter((field) => found.has(getNamedType(field.type)));
  listable = new Map(inputs.filter((type) => found.has(type)).map((type) => [type, walked(type).map((field): [string, GraphQLInputType] => [field.name, field.type])]));
  listableBySchema.set(schema, listable);
  return listable;
}

/**
 * Where in a variable's value an input object is given as a list (`` for the value itself, else
 * its `.field` and `[index]` steps), or null; only types in `listable` are walked (listableTypes).
 * (Any other value that is no object graphql-js and graphql-jit refuse themselves.)
 */
function listForInputObject(type: GraphQLInputType, value: unknown, listable: Map<GraphQLNamedType, [string, GraphQLInputType][]>): string | null {
  const named = getNullableType(type);
  const fields = listable.get(getNamedType(named));
  if (value == null || !fields) return null;
  if (isListType(named)) {
    if (!Array.isArray(value)) return listForInputObject(named.ofType, value, listable);
    for (const [index, item] of value.entries()) {
      const at = listForInputObject(named.ofType, item, listable);
      if (at !== null) return `[${index}]${at}`;
    }
    return null;
  }
  if (typeof value !== 'object') return null;
  if (Array.isArray(value)) return '';
  for (const [name, fieldType] of fields) {
    const at = listForInputObject(fieldType, (value as Record<string, unknown>)[name], listable);
    if (at !== null) return `.${name}${at}`;
  }
  return null;
}

/** The refusal of the first variable whose value has a list for an input object (listForInputObject), or null. */
function inputObjectGivenAList({ schema, document, operationName, variableValues }: ExecutionArgs): GraphQLError | null {
  const listable = listableTypes(schema);
  for (const definition of getOperationAST(document, operationName)?.variableDefinitions ?? []) {
    const type = typeFromAST(schema, definition.type) as GraphQLInputType | undefined;
    const name = definition.variable.name.value;
    const at = type ? listForInputObject(type, variableValues?.[name], listable) : null;
    if (at === null) continue;
    return new GraphQLError(`Variable "$${name}" got a list${at ? ` at "${name}${at}"` : ''} where an input object goes: send a JSON object`, {
      nodes: [definition],
      extensions: { code: 'BAD_USER_INPUT', http: { status: 400, spec: true } },
    });
  }
  return null;
}

/** Refuses a list given for an input object (inputObjectGivenAList) before a query or mutation runs, over HTTP and graphql-ws (no subscription takes one). */
function useInputObjectsAreObjects(): Plugin {
  return {
    onExecute({ args, setResultAndStopExecution }) {
      const refused = inputObjectGivenAList(args);
      if (refused) setResultAndStopExecution({ errors: [refused] });
    },
  };
}

/** Validation's refusals of values written in the document, their literals cut (withLiteralsCut); over every transport. */
function useLiteralsCut(): Plugin {
  return {
    onValidate: () => ({ result, setResult }) => {
      if (result.length > 0) setResult(result.map((error) => (error instanceof GraphQLError ? withLiteralsCut(error) : error)));
    },
  };
}

/** yoga's OPERATION_RESOLUTION_FAILURE, worded by src/graphql/operation-resolution.ts (it names the document's operations). */
function useOperationResolutionAnswers(): Plugin {
  const requests = new WeakMap<Request, { query?: string; operationName?: string | null }>();
  return {
    onParams({ params, request }) {
      requests.set(request, params);
    },
    onResultProcess({ request, result, setResult }) {
      if (Array.isArray(result) || Symbol.asyncIterator in result) return;
      const params = requests.get(request);
      const refused = result.errors?.find((error) => error.extensions?.code === 'OPERATION_RESOLUTION_FAILURE');
      const worded = refused && params?.query ? operationResolutionErrorOf(params.query, params.operationName) : undefined;
      if (!worded) return;
      setResult({ ...result, errors: [new GraphQLError(worded.message, { extensions: { ...refused!.extensions, ...worded.extensions } })] });
    },
  };
}

/** A stream session cookie opens subscriptions only: a query or mutation with it is UNAUTHENTICATED. */
function useStreamSessionForSubscriptionsOnly(): Plugin {
  return {
    onExecute({ args, setResultAndStopExecution }) {
      if (!(args.contextValue as unknown as GraphQLContext).viaStreamSession) return;
      setResultAndStopExecution({
        errors: [
          new GraphQLError('The stream session cookie authenticates subscriptions only: send queries and mutations to /graphql with "Authorization: Bearer <JWT>"', {
            extensions: { code: 'UNAUTHENTICATED' },
          }),
        ],
      });
    },
  };
}

/**
 * A GET's (or a form's) parameters, from their %-escaped text, as yoga reads them, except that
 * `variables` or `extensions` that are not JSON are the client's error, named as such (yoga's
 * parser lets JSON.parse throw, which answered an INTERNAL_SERVER_ERROR), and so are %-escapes of
 * bytes that are not UTF-8 (URLSearchParams makes each U+FFFD).
 */
function paramsOf(escaped: string) {
  checkEscapes(escaped);
  const search = new URLSearchParams(escaped);
  const json = (name: 'variables' | 'extensions') => {
    const text = search.get(name);
    if (!text) return undefined;
    try {
      return JSON.parse(text);
    } catch (error) {
      throw notJson(`The "${name}" parameter`, error as Error);
    }
  };
  return { query: search.get('query') || undefined, operationName: search.get('operationName') || undefined, variables: json('variables'), extensions: json('extensions') };
}

/**
 * A body (or parameter) that JSON.parse refused, as a short answer: where the parser stopped, cut
 * as every echoed value is (the parser's message quotes a whole short text, so a body could come
 * back whole), never the parser's error object. NaN and Infinity, which some encoders write
 * (Python's json.dumps), are named with what to send instead.
 */
function notJson(what: string, error: Error): GraphQLError {
  const hint = /\b(NaN|Infinity)\b/.test(error.message) ? ' (NaN and Infinity are not JSON: send null, a string or a finite number)' : '';
  return bodyError(`${what} is not valid JSON: ${echoed(error.message, 200)}${hint}`, 400, 'BAD_REQUEST');
}

/** yoga's answer to a POST body JSON.parse refused: "POST body sent invalid JSON.", the parser's error (the body quoted in it) in extensions. */
const refusedJson = (error: unknown): Error | undefined => {
  const original = error instanceof GraphQLError ? error.extensions?.originalError : undefined;
  return original && typeof original === 'object' && (original as Error).name === 'SyntaxError' ? (original as Error) : undefined;
};

/** The media types yoga parses a POST body of (application/graphql-response+json is one to accept, not to send). */
const POST_MEDIA_TYPES = ['application/json', 'application/graphql+json', 'application/x-www-form-urlencoded', 'application/graphql', 'multipart/form-data'];
/**
 * What is not a GraphQL request gets a JSON answer saying what to send: a POST body of another
 * media type is 415, a request without a query 400.
 */
function useNotAGraphQLRequestAnswers(): Plugin {
  return {
    // A media type is case-insensitive (RFC 9110 §8.3.1); yoga matches it as written. Its
    // parameters are left as they are (a multipart boundary is case-sensitive).
    onRequest({ request }) {
      const given = request.headers.get('content-type');
      const mediaType = given?.split(';')[0];
      if (given && mediaType !== mediaType!.toLowerCase()) request.headers.set('content-type', mediaType!.toLowerCase() + given.slice(mediaType!.length));
    },
    onRequestParse({ request, requestParser, setRequestParser }) {
      const mediaType = mediaTypeOf(request);
      if (request.method === 'GET') return setRequestParser(async (req) => paramsOf(new URL(req.url).search.slice(1)));
      if (mediaType === 'application/x-www-form-urlencoded') return setRequestParser(async (req) => paramsOf(await utf8TextOf(req)));
      if (request.method === 'POST' && requestParser) {
        return setRequestParser(async (req) => {
          try {
            return await requestParser(req);
          } catch (error) {
            const syntax = refusedJson(error);
            throw syntax ? notJson('The request body', syntax) : error;
          }
        });
      }
      if (request.method !== 'POST') return;
      const given = echoed(request.headers.get('content-type') ?? 'none');
      throw bodyError(
        `Unsupported Content-Type "${given}": send the operation as application/json ({"query": ..., "variables": ...}); also accepted: ${POST_MEDIA_TYPES.slice(1).join(', ')}`,
        415,
        'BAD_REQUEST',
      );
    },
    // yoga answers an Accept it cannot meet with an empty 406 (its media types only in an `accept`
    // header): curl prints nothing at all. The body says what to send, in JSON whatever was asked.
    onResponse({ request, response, setResponse, fetchAPI }) {
      if (response.status !== 406 || response.body) return;
      const offered = response.headers.get('accept') ?? '';
      const stream = !/application\/json/.test(offered);
      const given = echoed(request.headers.get('accept') ?? 'none');
      const message = stream
        ? `This request's Accept: ${given} has no media type a subscription answers in: a subscription is a stream of events, send Accept: text/event-stream (curl -N -H 'Accept: text/event-stream' …)`
        : `This request's Accept: ${given} has no media type this server answers in: send Accept: application/json (or application/graphql-response+json; a subscription: text/event-stream)`;
      const headers = new fetchAPI.Headers(response.headers);
      headers.set('content-type', 'application/json; charset=utf-8');
      setResponse(new fetchAPI.Response(JSON.stringify({ errors: [{ message, extensions: { code: 'BAD_REQUEST' } }] }), { status: 406, headers }));
    },
    // yoga's own answer, "Must provide query string.", leaves a client that posted JSON as a form
    // (curl -d's default type) guessing.
    onParams({ params, request }) {
      if (params.query != null) return;
      // Automatic persisted queries are not kept: this answer (message and code as Apollo's and
      // urql's links know them) makes a client's link send the whole query from then on.
      if (params.extensions?.persistedQuery) throw bodyError('PersistedQueryNotSupported', 400, 'PERSISTED_QUERY_NOT_SUPPORTED');
      if (request.method === 'GET') throw bodyError('No GraphQL query in the request: a GET carries it in the URL, as ?query=... (and &variables=... as JSON)', 400, 'BAD_REQUEST');
      const given = echoed(request.headers.get('content-type') ?? 'none');
      throw bodyError(
        `No GraphQL query in the request: send {"query": ..., "variables": ...} as JSON with Content-Type: application/json (this request's Content-Type: ${given})`,
        400,
        'BAD_REQUEST',
      );
    },
  };
}

/**
 * An answer's CORS headers depend on the request's Origin (listed or not), so every answer says
 * so to caches, whatever its origin: a GET query's answer cached for one origin is not another's.
 */
function useVaryByOrigin(): Plugin {
  return {
    onResponse({ response }) {
      const vary = response.headers.get('vary') ?? '';
      if (!vary.split(',').some((name) => name.trim().toLowerCase() === 'origin')) response.headers.append('vary', 'Origin');
    },
  };
}

/**
 * GraphQL answers carry audits (tool inputs and outputs): no browser or proxy may keep a copy, on
 * disk or anywhere (`no-store`), GET answers included. Answers that say otherwise keep their word:
 * the GraphiQL page (revalidated) and SSE streams.
 */
function useNoStoredAnswers(): Plugin {
  return {
    onResponse({ response }) {
      if (!response.headers.has('cache-control')) response.headers.set('cache-control', 'no-store');
    },
  };
}

const gzipped = promisify(gzip);

/**
 * A JSON answer (one body) is gzipped for a client that accepts it: a long thread's newest 500
 * audits are 280 kB of JSON and 20 kB gzipped, 5.6 s against 0.4 s on a phone's 400 kbit/s.
 * Streams (SSE, multipart) are left alone: a compressor would hold their events back (whatwg-node's
 * useContentEncoding compresses every body, streams too). Answers
 * under a kilobyte gain nothing worth the work.
 */
function useCompressedAnswers(): Plugin {
  return {
    async onResponse({ request, response, setResponse, fetchAPI }) {
      const json = /^application\/(graphql-response\+)?json\b/.test(response.headers.get('content-type') ?? '');
      const small = Number(response.headers.get('content-length') ?? Infinity) < 1024;
      if (!json || small || response.headers.has('content-encoding') || !/\bgzip\b/.test(request.headers.get('accept-encoding') ?? '')) return;
      const body = new Uint8Array(await gzipped(await response.arrayBuffer())) as Uint8Array<ArrayBuffer>;
      const headers = new fetchAPI.Headers(response.headers);
      headers.set('content-encoding', 'gzip');
      headers.set('content-length', String(body.byteLength));
      headers.append('vary', 'Accept-Encoding');
      setResponse(new fetchAPI.Response(body, { status: response.status, statusText: response.statusText, headers }));
    },
  };
}

/** The GraphQL server every transport goes through: HTTP and SSE by request, graphql-ws by its envelop. */
export type GraphQLServer = YogaServerInstance<ServerContext, GraphQLContext>;

export function createGraphQLServer(options: {
  deps: DomainDeps;
  /** The Pothos Prisma plugin's client. */
  prisma: PrismaClient;
  pubsub: PubSub;
  verifier: TokenVerifier;
  maxQueryCost: number;
  maxAnswerPayloadBytes: number;
  maxBodyBytes: number;
  /** Origins other than the server's own that browsers may call it from. */
  corsOrigins: string[];
  /** What each principal's SSE streams and graphql-ws connections together may hold unsent. */
  unsentBudget?: UnsentBudget;
  /** More plugins, after these. */
  plugins?: Plugin[];
}): GraphQLServer {
  const graphiql = graphiqlWithPolicy();
  return createYoga<ServerContext, GraphQLContext>({
    schema,
    graphqlEndpoint: '/graphql',
    // yoga's own health check off: it answered any URL ending in its endpoint (`/health`, `/x/health`,
    // `/graphql?query=…&from=/health`) with an empty 200, so a probe typed for /healthz looked healthy
    // (docs/operations.md documents only /healthz and /readyz). No URL ends in a space: every URL encodes it.
    healthCheckEndpoint: ' ',
    landingPage: false,
    // Cross-origin access is an allow-list: another origin gets CORS headers only when listed,
    // and never credentials (a bearer header needs none; the stream cookie is SameSite=Strict).
    cors: (request) => {
      const origin = request.headers.get('origin');
      return isAllowedOrigin(origin, options.corsOrigins) ? { origin: [origin], credentials: false, exposedHeaders: EXPOSED_HEADERS } : false;
    },
    maxRequestBodySize: false, // useBodyLimit below
    parserAndValidationCache: { documentCache: new DocumentCache(), errorCache: new DocumentCache(), validationCache: true },
    // Subscriptions over SSE: GraphiQL then sends its headers (the bearer token) with them too;
    // over graphql-ws it would put them where no WebSocket client puts its token.
    graphiql: { title: 'Agent audit server', subscriptionsProtocol: 'SSE' },
    // GraphiQL's scripts and styles inlined from the package, so it works without internet.
    renderGraphiQL: graphiql.render,
    logging: {
      debug: () => {},
      info: () => {},
      warn: (...args: unknown[]) => log.warn({ yoga: args.map((arg) => (arg instanceof Error ? errorFields(arg) : String(arg))) }, 'yoga warning'),
      // Client errors are answers, not incidents; unexpected failures are logged by maskError.
      error: (...args: unknown[]) => {
        if (!args.some((arg) => arg instanceof DomainError || arg instanceof GraphQLError)) {
          log.error({ yoga: args.map((arg) => (arg instanceof Error ? errorFields(arg) : String(arg))) }, 'yoga error');
        }
      },
    },
    maskedErrors: { maskError: (error) => maskError(error, () => randomUUID()) },
    context: async ({ request, connectionParams, streamSession }) => ({
      ...(streamSession ??
        (await authenticate(
          options.verifier,
          request?.headers.get('authorization') ?? connectionParams?.authorization ?? connectionParams?.Authorization,
        ))),
      viaStreamSession: streamSession !== undefined,
      deps: options.deps,
      prisma: options.prisma,
      pubsub: options.pubsub,
      requestId: requestIdOf(request?.headers.get('x-request-id')),
      loaders: createLoaders(options.deps),
    }),
    plugins: [
      useErrorsWithoutTheirRequests(),
      useDocumentNestingLimit(),
      useVaryByOrigin(),
      useNoStoredAnswers(),
      graphiql.plugin,
      EnvelopArmorPlugin({
        maxDepth: { n: 10, ...armorLimit((found) => `The document is nested ${found} levels deep; at most 10 are allowed (GraphQL Armor's depth limit)`) },
        maxAliases: { n: 15, ...armorLimit((found) => `The document uses ${found} aliases; at most 15 are allowed (GraphQL Armor's alias limit)`) },
        maxDirectives: { n: 20, ...armorLimit((found) => `The document uses ${found} directives; at most 20 are allowed (GraphQL Armor's directive limit)`) },
        // Refused while parsing, where there is no validation context to report to: thrown as the
        // limit it is (Armor's own error is a "Syntax Error" without a code).
        maxTokens: {
          n: MAX_DOCUMENT_TOKENS,
          onReject: [
            () => {
              throw new GraphQLError(`The document has more than ${MAX_DOCUMENT_TOKENS} tokens; at most ${MAX_DOCUMENT_TOKENS} are allowed (GraphQL Armor's token limit)`, { extensions: { code: 'BAD_USER_INPUT' } });
            },
          ],
        },
        costLimit: { enabled: false }, // useQueryCostLimit counts list sizes
        // Suggestions on ("Did you mean \"items\"?"): the schema is public anyway (introspection answers
        // without a token, GraphiQL is served, schema.graphql is published), so hiding them protected nothing.
        blockFieldSuggestion: { enabled: false },
      }),
      useQueryCostLimit(options.maxQueryCost),
      useReadsPerRequestLimit(),
      useCorrelatedMasking(),
      useOperationForms(),
      useUtf8Bodies(),
      useNotAGraphQLRequestAnswers(),
      // After every plugin that sets a request parser: each replaces the one before, so a parser set
      // after this one (a form's) would read the body uncounted.
      useBodyLimit(options.maxBodyBytes),
      useStreamSessionForSubscriptionsOnly(),
      useOperationResolutionAnswers(),
      useVariableErrorsOfGraphqlJs(),
      useInputObjectsAreObjects(),
      useLiteralsCut(),
      // Before every plugin that counts or starts a subscription: none of them sees one not started.
      useNoSubscriptionsForClientsGone(),
      useSharedSubscriptions(),
      ...(options.plugins ?? []),
      useSseEventIds(options.unsentBudget),
      // Queries and mutations run compiled (graphql-jit: the plan, variable coercion and result
      // building are generated once per document); subscriptions start on graphql-js, whose
      // subscribe graphql-jit does not match (arguments of a GET/SSE subscription arrive empty),
      // and execute their events compiled (src/transports/shared-subscriptions.ts).
      useGraphQlJit(
        {},
        {
          enableIf: ({ document, operationName }) => getOperationAST(document, operationName)?.operation !== 'subscription' && compilable(document),
        },
      ),
      // After graphql-jit: it wraps whichever executor runs the query.
      useAnswerPayloadLimit(options.maxAnswerPayloadBytes),
      useReadsCancelledForClientsGone(),
      // Last: it compresses the answer as the other plugins left it.
      useCompressedAnswers(),
    ],
  });
}
