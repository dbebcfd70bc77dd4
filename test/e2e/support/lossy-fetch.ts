import type { FetchLike } from '@agent-audit/client';

/**
 * A network that loses the first response to every distinct request (of those whose body
 * `which` accepts): the server receives it and commits, the caller sees a transport failure.
 * Retries of the identical body get through.
 */
export function losingFirstResponses(which: (body: string) => boolean = () => true): FetchLike & { lost: string[] } {
  const seen = new Set<string>();
  const lost: string[] = [];
  const fetchImpl: FetchLike = async (url, init) => {
    const response = await fetch(url, init);
    const body = String(init.body);
    if (seen.has(body) || !which(body)) return response;
    seen.add(body);
    await response.arrayBuffer();
    lost.push((JSON.parse(body) as { operationName: string }).operationName);
    throw new TypeError('fetch failed: the connection was reset after the request was sent');
  };
  return Object.assign(fetchImpl, { lost });
}
