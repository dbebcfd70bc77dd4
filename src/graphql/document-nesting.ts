import { GraphQLError } from 'graphql';
import type { Plugin } from 'graphql-yoga';

/**
 * How deep brackets (`{`, `[`, `(`) may nest in a document. graphql-js parses recursively (as
 * does GraphQL Armor's token counter, which parses first): a literal or selection nested a few
 * thousand deep overflows the stack before any limit sees it. No document this server answers
 * needs more (10 levels of selections, arguments and their input objects); JSON values that
 * nest deeper go in variables.
 */
export const MAX_DOCUMENT_NESTING = 200;

/** The deepest bracket nesting of `source` outside strings and comments, stopping past `limit`. */
function nestingOf(source: string, limit: number): number {
  let depth = 0;
  let deepest = 0;
  for (let i = 0; i < source.length; i++) {
    const c = source[i];
    if (c === '#') {
      while (i < source.length && source[i] !== '\n' && source[i] !== '\r') i++;
    } else if (c === '"') {
      if (source.startsWith('"""', i)) {
        const end = source.indexOf('"""', i + 3);
        // Inside a block string only \""" escapes; skip to the closing quotes that are not escaped.
        let close = end;
        while (close > 0 && source[close - 1] === '\\') close = source.indexOf('"""', close + 3);
        if (close < 0) return deepest;
        i = close + 2;
      } else {
        for (i++; i < source.length && source[i] !== '"' && source[i] !== '\n'; i++) if (source[i] === '\\') i++;
      }
    } else if (c === '{' || c === '[' || c === '(') {
      deepest = Math.max(deepest, ++depth);
      if (deepest > limit) return deepest;
    } else if (c === '}' || c === ']' || c === ')') {
      depth--;
    }
  }
  return deepest;
}

/**
 * Refuses a document nested deeper than MAX_DOCUMENT_NESTING before anything parses it, on every
 * transport: a 400 saying so, nothing logged. Must come before GraphQL Armor's plugin.
 */
export function useDocumentNestingLimit(): Plugin {
  return {
    onParse({ params }) {
      const source = typeof params.source === 'string' ? params.source : params.source.body;
      if (nestingOf(source, MAX_DOCUMENT_NESTING) > MAX_DOCUMENT_NESTING) {
        throw new GraphQLError(`The document nests brackets more than ${MAX_DOCUMENT_NESTING} levels deep; at most ${MAX_DOCUMENT_NESTING} are allowed (put deep values in variables)`, {
          extensions: { code: 'BAD_USER_INPUT', http: { status: 400 } },
        });
      }
    },
  };
}
