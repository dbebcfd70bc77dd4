import type { Plugin } from 'graphql-yoga';

/** The most text of one document kept parsed: larger documents are parsed again each time. */
export const MAX_CACHED_DOCUMENT_CHARS = 64 * 1024;
/** The most document text each cache keeps in all, and the most documents. */
export const DOCUMENT_CACHE_CHARS = 16 * 1024 * 1024;
export const DOCUMENT_CACHE_ENTRIES = 1024;

/**
 * yoga's parsed documents (and parse errors) by document text, least recently used out first,
 * bounded by their text as well as their number: yoga's own cache keeps 1024 of any size for an
 * hour, and distinct large documents, refused or not, from any client without a token, held
 * hundreds of megabytes (200 of 1 MB: 400 MB of heap).
 */
export class DocumentCache<T> {
  private readonly entries = new Map<string, T>();
  private chars = 0;

  get(text: string): T | undefined {
    const value = this.entries.get(text);
    if (value !== undefined) {
      this.entries.delete(text);
      this.entries.set(text, value);
    }
    return value;
  }

  set(text: string, value: T): void {
    if (text.length > MAX_CACHED_DOCUMENT_CHARS) return;
    if (this.entries.delete(text)) this.chars -= text.length;
    this.entries.set(text, value);
    this.chars += text.length;
    while (this.chars > DOCUMENT_CACHE_CHARS || this.entries.size > DOCUMENT_CACHE_ENTRIES) {
      const oldest = this.entries.keys().next().value!;
      this.entries.delete(oldest);
      this.chars -= oldest.length;
    }
  }
}

/**
 * The errors of parsing and validation are kept with their documents (yoga's caches, and the cost
 * rule's, src/graphql/query-cost.ts). An error's stack, until read, holds the frames that raised
 * it, and with them the request's context: its body, and over HTTP the Node response and socket.
 * Read here once, the stack is text and the request can go.
 */
export function useErrorsWithoutTheirRequests(): Plugin {
  const settle = (error: unknown) => void (error instanceof Error && error.stack);
  return {
    onParse: () => ({ result }) => settle(result),
    onValidate: () => ({ result }) => result.forEach(settle),
  };
}
