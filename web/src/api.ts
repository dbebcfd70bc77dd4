import { createClient, type Client, type Sink } from 'graphql-ws';
import type { FormattedExecutionResult } from 'graphql';
import type { TypedDocumentString } from './generated/graphql/graphql.js';

const TOKEN_KEY = 'audit-token';

/** The bearer token lives in this tab's sessionStorage only, never in a URL. */
export const storedToken = () => sessionStorage.getItem(TOKEN_KEY);
export const storeToken = (token: string | null) =>
  token ? sessionStorage.setItem(TOKEN_KEY, token) : sessionStorage.removeItem(TOKEN_KEY);

export interface Claims {
  sub: string;
  role: string;
}

/** What the token says about its holder, for display; the server still checks everything. */
export function claimsOf(token: string): Claims | null {
  try {
    const payload = JSON.parse(atob(token.split('.')[1]!.replace(/-/g, '+').replace(/_/g, '/'))) as Partial<Claims>;
    return typeof payload.sub === 'string' && typeof payload.role === 'string' ? { sub: payload.sub, role: payload.role } : null;
  } catch {
    return null;
  }
}

export class GraphQLRequestError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
  ) {
    super(message);
  }
}

/** Sends a query from queries.ts: its variables and its result are typed by the document. */
export async function gql<TResult, TVariables>(token: string, document: TypedDocumentString<TResult, TVariables>, variables: TVariables): Promise<TResult> {
  const response = await fetch('/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query: document.toString(), variables }),
  });
  const body = (await response.json()) as { data?: TResult; errors?: { message: string; extensions?: { code?: string } }[] };
  const [error] = body.errors ?? [];
  if (error) throw new GraphQLRequestError(error.message, error.extensions?.code);
  return body.data as TResult;
}

/**
 * Follows a subscription from queries.ts. graphql-ws re-sends this same `variables` object on
 * every reconnect, so a caller may update it to resume where it left off.
 */
export function subscribe<TResult, TVariables extends Record<string, unknown>>(
  client: Client,
  document: TypedDocumentString<TResult, TVariables>,
  variables: TVariables,
  sink: Sink<FormattedExecutionResult<TResult>>,
): () => void {
  return client.subscribe({ query: document.toString(), variables }, sink);
}

/** One graphql-ws connection for the page; it retries for ever, so a dropped network heals. */
export function createLiveClient(token: string, onState: (state: 'live' | 'reconnecting') => void): Client {
  const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/graphql`;
  return createClient({
    url,
    connectionParams: { authorization: `Bearer ${token}` },
    retryAttempts: Infinity,
    shouldRetry: () => true,
    retryWait: async (retries) => new Promise((resolve) => setTimeout(resolve, Math.min(250 * 2 ** retries, 3000))),
    keepAlive: 2000,
    on: {
      connected: () => onState('live'),
      closed: () => onState('reconnecting'),
      error: () => onState('reconnecting'),
    },
  });
}
