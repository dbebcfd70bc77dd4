import { connect, createServer, type Socket } from 'node:net';

/**
 * A TCP proxy in front of a server (PostgreSQL here), to take it away as a restart does: `down()`
 * cuts every open connection and refuses new ones (ECONNREFUSED) until `up()`.
 */
export async function startTcpProxy(target: { host: string; port: number }) {
  const open = new Set<Socket>();
  const listen = async (port: number) => {
    const server = createServer((client) => {
      const upstream = connect(target.port, target.host);
      for (const socket of [client, upstream]) {
        open.add(socket);
        socket.on('close', () => open.delete(socket));
        socket.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, '127.0.0.1', resolve));
    return server;
  };
  let server = await listen(0);
  const { port } = server.address() as { port: number };
  return {
    port,
    /** The server goes away: open connections are reset, new ones refused. */
    async down(): Promise<void> {
      const closed = new Promise((resolve) => server.close(resolve));
      for (const socket of open) socket.destroy();
      await closed;
    },
    /** It is back on the same port. */
    async up(): Promise<void> {
      server = await listen(port);
    },
    async close(): Promise<void> {
      for (const socket of open) socket.destroy();
      if (server.listening) await new Promise((resolve) => server.close(resolve));
    },
  };
}
