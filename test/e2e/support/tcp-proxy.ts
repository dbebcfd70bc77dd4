import { connect, createServer, type Socket } from 'node:net';
import { afterAll, beforeAll } from 'vitest';

/**
 * A TCP proxy in front of a server (PostgreSQL here), to take it away as a restart does: `down()`
 * cuts every open connection and refuses new ones (ECONNREFUSED) until `up()`; or as a network
 * partition does: `stall()` holds every byte either way, resetting nothing, until `resume()`.
 */
export async function startTcpProxy(target: { host: string; port: number }) {
  const open = new Set<Socket>();
  let held: (() => void)[] | null = null;
  let silentAtFirstQuery = false;
  /** Runs `step` now, or after what is held when the link is stalled. */
  const inOrder = (step: () => void) => (held ? held.push(step) : step());
  const forward = (from: Socket, to: Socket) => {
    from.on('data', (chunk: Buffer) => inOrder(() => void (to.writable && to.write(chunk))));
    from.on('end', () => inOrder(() => to.end()));
  };
  /** A connection that carries its handshake, then nothing from its first simple query ('Q') on. */
  const silencedAtFirstQuery = (client: Socket, upstream: Socket) => {
    let silent = false;
    client.on('data', (chunk: Buffer) => void (!(silent ||= chunk[0] === 0x51) && upstream.write(chunk)));
    upstream.on('data', (chunk: Buffer) => void (!silent && client.write(chunk)));
  };
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
      if (silentAtFirstQuery) return silencedAtFirstQuery(client, upstream);
      forward(client, upstream);
      forward(upstream, client);
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
    /** The link goes silent: connections stay open (new ones are accepted), no byte passes, none is lost. */
    stall(): void {
      held ??= [];
    },
    /**
     * PostgreSQL's link goes silent for each connection opened from now on right after its
     * handshake: its first statement (a simple query) and everything after it are never carried.
     */
    silenceNewAtFirstQuery(): void {
      silentAtFirstQuery = true;
    },
    /** What was held passes, in order, and the link carries bytes again. */
    resume(): void {
      const writes = held ?? [];
      held = null;
      for (const write of writes) write();
    },
    async close(): Promise<void> {
      held = null;
      for (const socket of open) socket.destroy();
      if (server.listening) await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** A proxy in front of the server `url` names, and `url` through it (the same database, user and password). */
export async function startTcpProxyFor(url: string, defaultPort = 5432) {
  const direct = new URL(url);
  const proxy = await startTcpProxy({ host: direct.hostname, port: Number(direct.port || defaultPort) });
  const through = new URL(direct);
  through.host = `127.0.0.1:${proxy.port}`;
  return { ...proxy, url: through.toString() };
}

/**
 * A proxy in front of the test file's server process (serverForFile), started before its tests and
 * closed after them: `proxy` to take the server away, `url` its GraphQL endpoint through the proxy.
 */
export function proxyForFile(server: { readonly url: string }) {
  let proxy: Awaited<ReturnType<typeof startTcpProxy>> | undefined;
  beforeAll(async () => {
    proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(new URL(server.url).port) });
  });
  afterAll(async () => {
    await proxy?.close();
  });
  const started = () => {
    if (!proxy) throw new Error('the proxy starts before the tests (beforeAll)');
    return proxy;
  };
  return {
    get proxy() {
      return started();
    },
    get url() {
      const through = new URL(server.url);
      through.port = String(started().port);
      return through.toString();
    },
  };
}
