import {
  createSourceEventStream,
  execute,
  getOperationAST,
  Kind,
  print,
  type DocumentNode,
  type ExecutionArgs,
  type ExecutionResult,
  type GraphQLError,
} from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import { encodeCursor } from '../domain/change-cursors.js';
import type { CommittedChange } from '../domain/events.js';
import type { GraphQLContext } from '../graphql/context.js';
import { perEvent } from '../realtime/per-event.js';

type Result = ExecutionResult;

/**
 * The values of the variables the operation declares (a subscription started, so they coerced:
 * IDs, strings, numbers). Those it does not declare change nothing it delivers, and may be any
 * JSON, deeper than JSON.stringify can write.
 */
function declaredValues({ document, operationName, variableValues }: ExecutionArgs): unknown[] {
  const declared = getOperationAST(document, operationName)?.variableDefinitions ?? [];
  return declared.map((definition) => variableValues?.[definition.variable.name.value] ?? null);
}

const isAsyncIterable = (value: unknown): value is AsyncIterable<unknown> =>
  typeof (value as AsyncIterable<unknown>)?.[Symbol.asyncIterator] === 'function';

/**
 * A group's result for one event. Settled at once when execution completed synchronously;
 * otherwise, when it completes, every member waiting for it is called back in one pass.
 */
export interface Outcome {
  settled: boolean;
  result?: Result;
  /** Set when execution itself failed (not an error in the result). */
  failure?: { error: unknown };
  /** Called once it settles, in the order they were added. */
  waiters: (() => void)[];
  promise: Promise<Result>;
}

/**
 * One started subscriber: its own events, and the result its group shares for each. Iterated, it
 * yields those results one by one, as graphql-js's `subscribe` would (SSE); the graphql-ws
 * writer (websocket.ts) takes the events and outcomes themselves.
 */
export interface SharedStream extends AsyncIterable<Result> {
  events: AsyncIterator<unknown>;
  /** Executed by the first member of the group to ask for this event; the others get the same object. */
  resultOf(event: unknown): Promise<Result>;
  /** The same, as the group's outcome: members that find it settled use it without waiting. */
  outcomeOf?(event: unknown): Outcome;
}

const isPromiseLike = (value: unknown): value is PromiseLike<unknown> => typeof (value as PromiseLike<unknown>)?.then === 'function';

function settle(outcome: Outcome, result: Result | undefined, failure: Outcome['failure']): void {
  outcome.settled = true;
  outcome.result = result;
  outcome.failure = failure;
  const waiters = outcome.waiters;
  outcome.waiters = [];
  for (const waiter of waiters) waiter();
}

const EVENT_ID = Symbol('eventId');

/** A threadChanges result's cursor (SSE writes it as the event's `id:`). */
export const eventIdOf = (result: ExecutionResult): string | undefined => (result as { [EVENT_ID]?: string })[EVENT_ID];

/** The cursor of each threadChanges result travels with it, out of the JSON (a symbol key). */
function withEventId(args: ExecutionArgs, event: unknown, result: Result): Result {
  const field = getOperationAST(args.document, args.operationName)?.selectionSet.selections[0];
  const change = event as Partial<CommittedChange>;
  if (field?.kind !== Kind.FIELD || field.name.value !== 'threadChanges' || change.cursor === undefined) return result;
  const { deps } = args.contextValue as GraphQLContext;
  return Object.assign(result, { [EVENT_ID]: encodeCursor(deps.databaseId, change.threadId!, change.cursor) });
}

export const isSharedStream = (value: unknown): value is SharedStream => typeof value === 'object' && value !== null && 'resultOf' in value;

/**
 * Subscriptions that execute each event once per group, not once per subscriber. A group is every
 * subscription with the same document, operation, variables and principal: their results for an
 * event are identical, so the first member to reach an event executes it and the others share
 * that result (the same object; graphql-ws frames serialize it once, SSE streams each serialize it).
 *
 * Only execution is shared. Each subscriber starts as any other (scope auth and the access check
 * run in its own `subscribe` resolver) and keeps its own bounded queue of events: it receives
 * them in order, falls behind (and catches up) on its own, and stops listening when it leaves. A group is nothing but those queues holding the same event objects, so it ends with
 * its last member and its shared results are garbage once no member still holds the event.
 * A member asks for an event's result only after the previous one, so results never go backwards.
 */
export function sharedSubscriptions(mask: (error: GraphQLError, context: GraphQLContext) => GraphQLError, compilable: (document: DocumentNode) => boolean = () => false) {
  const executeOnce = perEvent<Outcome>();
  /**
   * Each document's selection compiled once (graphql-jit), where queries are compiled too
   * (`compilable`, src/server/yoga.ts): graphql-js builds arguments and resolve info for every
   * field of every event, a fifth of a dashboard view's CPU (120 buckets).
   */
  const compiled = new WeakMap<DocumentNode, CompiledQuery | null>();
  const compiledSelection = ({ schema, document, operationName }: ExecutionArgs): CompiledQuery | null => {
    let selection = compiled.get(document);
    if (selection === undefined) {
      const compiledQuery = compilable(document) ? compileQuery(schema, document, operationName ?? undefined) : null;
      compiled.set(document, (selection = compiledQuery && isCompiledQuery(compiledQuery) ? compiledQuery : null));
    }
    return selection;
  };
  const masked = (result: Result, context: GraphQLContext): Result =>
    result.errors ? { ...result, errors: result.errors.map((error) => mask(error, context)) } : result;

  /** Starts one subscriber; a result (with errors) when it cannot start. */
  async function start(args: ExecutionArgs): Promise<Result | SharedStream> {
    const context = args.contextValue as GraphQLContext;
    const source = await createSourceEventStream(args);
    if (!isAsyncIterable(source)) return masked(source as Result, context);
    const group = JSON.stringify([
      print(args.document),
      args.operationName ?? null,
      declaredValues(args),
      context.principal?.sub ?? null,
      context.principal?.role ?? null,
    ]);
    const finish = (event: unknown, result: Result) => withEventId(args, event, masked(result, context));
    const selection = compiledSelection(args);
    const outcomeOf = (event: unknown): Outcome =>
      executeOnce(event as object, group, () => {
        const outcome: Outcome = { settled: false, waiters: [], promise: null! };
        let executed: ReturnType<typeof execute>;
        try {
          executed = selection ? selection.query(event, args.contextValue, args.variableValues ?? {}) : execute({ ...args, rootValue: event });
        } catch (error) {
          executed = Promise.reject(error);
        }
        if (isPromiseLike(executed)) {
          outcome.promise = Promise.resolve(executed).then((result) => finish(event, result));
          outcome.promise.then(
            (result) => settle(outcome, result, undefined),
            (error: unknown) => settle(outcome, undefined, { error }),
          );
        } else {
          settle(outcome, finish(event, executed), undefined);
          outcome.promise = Promise.resolve(outcome.result!);
        }
        return outcome;
      });
    const events = source[Symbol.asyncIterator]();
    const resultOf = (event: unknown) => outcomeOf(event).promise;
    return { events, resultOf, outcomeOf, [Symbol.asyncIterator]: () => resultsOf(events, resultOf) };
  }

  return { start, subscribe: start };
}

/** A subscriber's results as an async iterator. Hand-written rather than an async generator: `return` must end a stream that waits for an event. */
function resultsOf(events: AsyncIterator<unknown>, resultOf: (event: unknown) => Promise<Result>): AsyncIterableIterator<Result> {
  const ended = (): IteratorResult<Result> => ({ value: undefined, done: true });
  const results: AsyncIterableIterator<Result> = {
    async next() {
      const next = await events.next();
      return next.done ? ended() : { value: await resultOf(next.value), done: false };
    },
    async return() {
      await events.return?.();
      return ended();
    },
    async throw(error: unknown) {
      await events.throw?.(error);
      return ended();
    },
    [Symbol.asyncIterator]() {
      return results;
    },
  };
  return results;
}
