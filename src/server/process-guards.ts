/**
 * Process-wide last resorts. A promise rejected with no handler is logged and the server goes
 * on: it is one failed piece of work, and every request's own errors are answered where they
 * happen (http-server.ts). An uncaught exception may have left state half-changed, so it is
 * logged and the server shuts down gracefully (`stop`) rather than dying with every connection.
 */
export function installProcessGuards(stop: (reason: string) => void): void {
  process.on('unhandledRejection', (reason) => {
    console.error('Unhandled promise rejection (the server goes on):', reason);
  });
  process.on('uncaughtException', (error) => {
    console.error('Uncaught exception: shutting down gracefully:', error);
    stop('uncaught exception');
  });
}
