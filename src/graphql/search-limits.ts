import { GraphQLError, type ValidationRule } from 'graphql';
import type { Plugin } from 'graphql-yoga';

/**
 * Searches are the one read whose cost does not follow from the caller's own data alone (a text
 * the index narrows poorly reads many audits), so they are counted as subscriptions are: per
 * request, refused whole before anything runs, and per principal on this instance, each search
 * over the cap refused alone while the others run.
 */
export const MAX_SEARCHES_PER_REQUEST = 2;
export const MAX_SEARCHES_PER_PRINCIPAL = 4;


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

/** The searches each principal (`sub`) has running on this instance. */
const running = new Map<string, number>();

/** Runs `search` for `sub` unless it already has MAX_SEARCHES_PER_PRINCIPAL running here. */
export async function withSearchSlot<T>(sub: string, search: () => Promise<T>): Promise<T> {
  const count = running.get(sub) ?? 0;
  if (count >= MAX_SEARCHES_PER_PRINCIPAL) {
    throw limitError(
      `A principal may run at most ${MAX_SEARCHES_PER_PRINCIPAL} searches at once on this server: wait for one to finish`,
      'SEARCHES_PER_PRINCIPAL',
      MAX_SEARCHES_PER_PRINCIPAL,
    );
  }
  running.set(sub, count + 1);
  try {
    return await search();
  } finally {
    const left = running.get(sub)! - 1;
    if (left === 0) running.delete(sub);
    else running.set(sub, left);
  }
}
