import { GraphQLError, type ValidationRule } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { WIDE_WINDOW_SECONDS } from '../domain/tool-activity.js';

/**
 * Searches are the one read whose cost does not follow from the caller's own data alone (a text
 * the index narrows poorly reads many audits), so they are counted as subscriptions are: per
 * request, refused whole before anything runs, and per principal on this instance, each search
 * over the cap refused alone while the others run. A toolActivity view over a window longer than
 * the default hour reads every end of the window (up to a week of a busy fleet's: seconds of
 * database CPU), so those views are counted per principal by the same rule, on their own count.
 */
export const MAX_SEARCHES_PER_REQUEST = 2;
export const MAX_SEARCHES_PER_PRINCIPAL = 4;
export const MAX_WIDE_VIEWS_PER_PRINCIPAL = 4;

function limitError(message: string, limit: string, max: number): GraphQLError {
  return new GraphQLError(message, { extensions: { code: 'BAD_USER_INPUT', limit, max } });
}

const searchesPerRequest: ValidationRule = (context) => {
  let count = 0;
  return {
    Field(node) {
      if (context.getParentType()?.name === 'Query' && node.name.value === 'searchAudits') count++;
    },
    Document: {
      leave() {
        if (count > MAX_SEARCHES_PER_REQUEST) {
          context.reportError(
            limitError(
              `The document runs searchAudits ${count} times; at most ${MAX_SEARCHES_PER_REQUEST} are allowed in one request`,
              'SEARCHES_PER_REQUEST',
              MAX_SEARCHES_PER_REQUEST,
            ),
          );
        }
      },
    },
  };
};

/** The per-request cap, as a validation rule of every transport. */
export function useSearchesPerRequestLimit(): Plugin {
  return {
    onValidate({ addValidationRule }) {
      addValidationRule(searchesPerRequest);
    },
  };
}

/** The reads each principal may run at once on this instance, each kind on its own count. */
const CAPPED = {
  search: { max: MAX_SEARCHES_PER_PRINCIPAL, limit: 'SEARCHES_PER_PRINCIPAL', what: 'searches' },
  wideView: { max: MAX_WIDE_VIEWS_PER_PRINCIPAL, limit: 'WIDE_VIEWS_PER_PRINCIPAL', what: `toolActivity views over more than ${WIDE_WINDOW_SECONDS} seconds` },
} as const;

/** The reads of each kind each principal (`sub`) has running on this instance. */
const running = { search: new Map<string, number>(), wideView: new Map<string, number>() };

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
