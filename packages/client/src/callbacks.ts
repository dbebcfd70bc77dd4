/**
 * Calls one of the runtime's callbacks (a logger, a metrics client) from the client's background
 * work: a lease keeper's timer, a run's write queue. One that throws must neither stop that work
 * nor end the process with an unhandled rejection: its error is printed, as an uncaught one would
 * be, and the work goes on.
 */
export function notify<T>(name: string, callback: ((value: T) => void) | undefined, value: T): void {
  try {
    callback?.(value);
  } catch (error) {
    console.error(`${name} threw`, error);
  }
}
