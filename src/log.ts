import pino from 'pino';

/*
 * The server's one logger: JSON lines on stdout (pino), one object per event, never a stack of
 * a driver's error object. Every module logs through `log` (or a `log.child({ component })`);
 * `errorFields` is how an error goes into a line.
 */

// Synchronous, so that the line of a start-up failure is out before `process.exit(1)`.
const stdout = pino.destination({ dest: 1, sync: true });
const listeners = new Set<(line: string) => void>();

/** LOG_LEVEL's values, least to most verbose; another value is refused at start (config.ts) and logs at info until then. */
export const LOG_LEVELS = ['silent', 'fatal', 'error', 'warn', 'info', 'debug', 'trace'] as const;
export const isLogLevel = (name: string) => (LOG_LEVELS as readonly string[]).includes(name);

export const log = pino(
  {
    level: isLogLevel(process.env.LOG_LEVEL ?? '') ? process.env.LOG_LEVEL : 'info',
    base: undefined,
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  },
  {
    write(line: string) {
      stdout.write(line);
      for (const listener of listeners) listener(line);
    },
  },
);

/** Calls `listener` with each line logged from now on, until the returned function is called (tests read what operators read). */
export function onLogLine(listener: (line: string) => void): () => void {
  listeners.add(listener);
  return () => void listeners.delete(listener);
}

/**
 * What a log line says of an error: its message and code (a PostgreSQL SQLSTATE, a socket's
 * errno name), the stack only for errors that are not a driver's (a bug's). Never the whole
 * object: a pg error carries the query's parameters.
 */
export function errorFields(error: unknown): { message: string; code?: string; stack?: string } {
  if (!(error instanceof Error)) return { message: String(error) };
  const code = (error as { code?: unknown }).code;
  const fromDriver = typeof code === 'string' || 'severity' in error;
  return {
    message: error.message,
    ...(typeof code === 'string' ? { code } : {}),
    ...(fromDriver || !error.stack ? {} : { stack: error.stack.split('\n').slice(0, 6).join(' | ') }),
  };
}

/** errorFields without a stack: for an error from outside the process (a lost connection, a collector's answer), never a bug's. */
export function outsideErrorFields(error: unknown): { message: string; code?: string } {
  const { stack: _stack, ...fields } = errorFields(error);
  return fields;
}
