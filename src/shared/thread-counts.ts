/**
 * The most threads `threads.totalCount` counts exactly: past it, it answers one more, which the page
 * shows as "10,000+". Shared by the server and the page (web/).
 */
export const MAX_THREADS_COUNTED = 10_000;

/** A thread count as the page says it: "3,000", or "10,000+" past the counted bound. */
export const threadCountLabel = (count: number) =>
  count > MAX_THREADS_COUNTED ? `${MAX_THREADS_COUNTED.toLocaleString('en')}+` : count.toLocaleString('en');
