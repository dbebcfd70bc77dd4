import { GraphQLError, type ValidationRule } from 'graphql';
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
export const MAX_WIDE_VIEWS_PER_PRINCIPAL = 4;

function limitError(message: string, limit: string, max: number): GraphQLError {
  return new GraphQLError(message, { extensions: { code: 'BAD_USER_INPUT', limit, max } });
}

/** The Query fields a request may hold only a few of. */
const PER_REQUEST = {
  searchAudits: { max: MAX_SEARCHES_PER_REQUEST, limit: 'SEARCHES_PER_REQUEST' },
  toolCallLedger: { max: MAX_LEDGER_READS_PER_REQUEST, limit: 'LEDGER_READS_PER_REQUEST' },
} as const;

const readsPerRequest: ValidationRule = (context) => {
  const counts = new Map<keyof typeof PER_REQUEST, number>();
  return {
    Field(node) {
      const field = node.name.value;
      if (context.getParentType()?.name === 'Query' && Object.hasOwn(PER_REQUEST, field)) {
        const capped = field as keyof typeof PER_REQUEST;
        counts.set(capped, (counts.get(capped) ?? 0) + 1);
      }
    },
    Document: {
      leave() {
        for (const [field, count] of counts) {
          const { max, limit } = PER_REQUEST[field];
          if (count > max) context.reportError(limitError(`The document runs ${field} ${count} times; at most ${max} are allowed in one request`, limit, max));
        }
      },
    },
  };
};

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
