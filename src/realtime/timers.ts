/** setTimeout's longest delay (about 24.8 days); tokens may live longer. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Calls `fn` at `atMs` (ms since the epoch), however far away; the returned function cancels it. */
export function at(atMs: number, fn: () => void): () => void {
  let timer: NodeJS.Timeout;
  const arm = () => {
    const wait = atMs - Date.now();
    timer = wait > MAX_TIMER_MS ? setTimeout(arm, MAX_TIMER_MS) : setTimeout(fn, Math.max(0, wait));
    // A pending expiry never keeps the process alive.
    timer.unref();
  };
  arm();
  return () => clearTimeout(timer);
}
