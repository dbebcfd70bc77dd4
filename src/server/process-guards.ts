import { errorFields, log } from '../log.js';

/**
 * Process-wide last resorts. A promise rejected with no handler is logged and the server goes
 * on: it is one failed piece of work, and every request's own errors are answered where they
 * happen (http-server.ts). An uncaught exception may have left state half-changed, so it is
 * logged and the server shuts down gracefully (`stop`) rather than dying with every connection.
 */
export function installProcessGuards(stop: (reason: string) => void): void {
  process.on('unhandledRejection', (reason) => {
    log.error({ error: errorFields(reason) }, 'unhandled promise rejection (the server goes on)');
  });
  process.on('uncaughtException', (error) => {
    log.error({ error: errorFields(error) }, 'uncaught exception: shutting down gracefully');
    stop('uncaught exception');
  });
}
