import { getNamedType, GraphQLError, isObjectType, Kind, type FieldNode, type GraphQLNamedType, type SelectionSetNode, type ValidationContext, type ValidationRule } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { WIDE_WINDOW_SECONDS } from '../domain/tool-activity.js';

/**
 * Searches are reads whose cost does not follow from the page asked for (a text the index
 * narrows poorly reads many audits), and so is a ledger read of a case few calls are in (it reads
 * every call its status filter leaves, below its walk), so they are counted as subscriptions are:
 * per request, refused whole before anything runs, and per principal on this instance, each read
 * over the cap refused alone while the others run. A toolActivity view over a window longer than
 * the default hour reads every end of the window (up to a week of a busy fleet's: seconds of
 * database CPU), so those views are counted per principal by the same rule, on their own count.
 */
export const MAX_SEARCHES_PER_REQUEST = 2;
export const MAX_SEARCHES_PER_PRINCIPAL = 4;
export const MAX_LEDGER_READS_PER_REQUEST = 2;
export const MAX_LEDGER_READS_PER_PRINCIPAL = 4;
export const MAX_THREAD_COUNTS_PER_REQUEST = 2;
export const MAX_WIDE_VIEWS_PER_PRINCIPAL = 4;

function limitError(message: string, limit: string, max: number): GraphQLError {
  return new GraphQLError(message, { extensions: { code: 'BAD_USER_INPUT', limit, max } });
}

/**
 * The fields a request may run only a few of, by type and field: each threads.totalCount counts up
 * to 10,001 threads, so 15 aliased pages ran 15 such counts in one request.
 */
const PER_REQUEST: Record<string, { max: number; limit: string; what: string }> = {
  'Query.searchAudits': { max: MAX_SEARCHES_PER_REQUEST, limit: 'SEARCHES_PER_REQUEST', what: 'searchAudits' },
  'Query.toolCallLedger': { max: MAX_LEDGER_READS_PER_REQUEST, limit: 'LEDGER_READS_PER_REQUEST', what: 'toolCallLedger' },
  'ThreadConnection.totalCount': { max: MAX_THREAD_COUNTS_PER_REQUEST, limit: 'THREAD_COUNTS_PER_REQUEST', what: 'threads.totalCount' },
};
/** The types whose fields are capped: the walk goes into no other. */
const CAPPED_TYPES = new Set(Object.keys(PER_REQUEST).map((key) => key.split('.')[0]));

/** The fields of `sets` by response key, fragments spread: what execution runs once each (graphql-js collectFields). */
function collectFields(context: ValidationContext, sets: readonly SelectionSetNode[], fields = new Map<string, FieldNode[]>(), spread = new Set<string>()) {
  for (const selection of sets.flatMap((set) => set.selections)) {
    if (selection.kind === Kind.FIELD) {
      const key = selection.alias?.value ?? selection.name.value;
      fields.set(key, [...(fields.get(key) ?? []), selection]);
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      collectFields(context, [selection.selectionSet], fields, spread);
    } else if (!spread.has(selection.name.value)) {
      spread.add(selection.name.value);
      const fragment = context.getFragment(selection.name.value);
      if (fragment) collectFields(context, [fragment.selectionSet], fields, spread);
    }
  }
  return fields;
}

/** Counts the capped fields `sets` run on `type`, aliases and fragments included, into `counts`. */
function countRuns(context: ValidationContext, type: GraphQLNamedType | null | undefined, sets: readonly SelectionSetNode[], counts: Map<string, number>) {
  if (!isObjectType(type)) return;
  for (const nodes of collectFields(context, sets).values()) {
    const name = nodes[0]!.name.value;
    const capped = `${type.name}.${name}`;
    if (Object.hasOwn(PER_REQUEST, capped)) counts.set(capped, (counts.get(capped) ?? 0) + 1);
    const fieldType = type.getFields()[name]?.type;
    const inner = fieldType && getNamedType(fieldType);
    if (inner && CAPPED_TYPES.has(inner.name)) countRuns(context, inner, nodes.flatMap((node) => (node.selectionSet ? [node.selectionSet] : [])), counts);
  }
}

const readsPerRequest: ValidationRule = (context) => ({
  OperationDefinition: {
    leave(operation) {
      const counts = new Map<string, number>();
      countRuns(context, context.getSchema().getRootType(operation.operation), [operation.selectionSet], counts);
      for (const [field, count] of counts) {
        const { max, limit, what } = PER_REQUEST[field]!;
        if (count > max) context.reportError(limitError(`The document runs ${what} ${count} times; at most ${max} are allowed in one request`, limit, max));
      }
    },
  },
});

/** The per-request caps, as a validation rule of every transport. */
export function useReadsPerRequestLimit(): Plugin {
  return {
    onValidate({ addValidationRule }) {
      addValidationRule(readsPerRequest);
    },
  };
}

/** The reads each principal may run at once on this instance, each kind on its own count. */
const CAPPED = {
  search: { max: MAX_SEARCHES_PER_PRINCIPAL, limit: 'SEARCHES_PER_PRINCIPAL', what: 'searches' },
  ledger: { max: MAX_LEDGER_READS_PER_PRINCIPAL, limit: 'LEDGER_READS_PER_PRINCIPAL', what: 'tool-call ledger reads' },
  wideView: { max: MAX_WIDE_VIEWS_PER_PRINCIPAL, limit: 'WIDE_VIEWS_PER_PRINCIPAL', what: `toolActivity views over more than ${WIDE_WINDOW_SECONDS} seconds` },
} as const;

/** The reads of each kind each principal (`sub`) has running on this instance. */
const running = { search: new Map<string, number>(), ledger: new Map<string, number>(), wideView: new Map<string, number>() };

/** Runs `read` for `sub` unless it already has the cap of reads of that `kind` running here. */
export async function withReadSlot<T>(kind: keyof typeof CAPPED, sub: string, read: () => Promise<T>): Promise<T> {
  const { max, limit, what } = CAPPED[kind];
  const counts = running[kind];
  const count = counts.get(sub) ?? 0;
  if (count >= max) {
    throw limitError(`A principal may run at most ${max} ${what} at once on this server: wait for one to finish`, limit, max);
  }
  counts.set(sub, count + 1);
  try {
    return await read();
  } finally {
    const left = counts.get(sub)! - 1;
    if (left === 0) counts.delete(sub);
    else counts.set(sub, left);
  }
}
