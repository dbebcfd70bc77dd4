import { existsSync, readFileSync } from 'node:fs';
import net from 'node:net';
import { startTestApp, type TestApp } from '../support/app.js';

/** The Redis the suites fan out through when TEST_REDIS_URL is set (in-process pub/sub otherwise). */
export const testRedisUrl = process.env.TEST_REDIS_URL || undefined;

export interface ListeningApp extends TestApp {
  /** Its GraphQL endpoint on a real socket, for WebSocket and HTTP clients. */
  url: string;
}

/** The app a subscription suite runs against: on a free port, fanning out through Redis when TEST_REDIS_URL is set. */
export async function startListeningApp(): Promise<ListeningApp> {
  const t = await startTestApp(testRedisUrl ? { REDIS_URL: testRedisUrl } : {});
  return Object.assign(t, { url: await t.app.start(0) });
}

/**
 * A TCP proxy in front of `target`, to play a network that misbehaves: `stall` stops reading
 * from the target (a client that stops reading), `cut` drops every connection and refuses new
 * ones (an outage), `restore` listens again on the same port, `hold` keeps a client's bytes from
 * the target from the first that match a pattern (a request that is slow to arrive) until `release`.
 */
export async function tcpProxy(target: { host: string; port: number }) {
  const pairs = new Set<{ client: net.Socket; upstream: net.Socket; head: string; held: Buffer[] | null }>();
  let stalled = false;
  let holding: RegExp | null = null;
  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host);
    const pair = { client, upstream, head: '', held: null as Buffer[] | null };
    pairs.add(pair);
    client.once('data', (chunk: Buffer) => (pair.head = chunk.toString('latin1')));
    const drop = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.on('data', (chunk: Buffer) => {
      if (!pair.held && holding?.test(chunk.toString('latin1'))) pair.held = [];
      if (pair.held) pair.held.push(chunk);
      else if (!upstream.write(chunk)) {
        client.pause();
        upstream.once('drain', () => client.resume());
      }
    });
    client.on('end', () => upstream.end());
    if (stalled) upstream.pause();
    else upstream.pipe(client);
  });
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port));
    });
  const port = await listen(0);
  return {
    port,
    url: (scheme: string) => `${scheme}://127.0.0.1:${port}`,
    /** The local ports of its connections to the target. */
    upstreamPorts: () => [...pairs].map(({ upstream }) => upstream.localPort!),
    /** Its open connections: each one's first bytes from its client (an HTTP request's head), and the bytes it has passed back to it. */
    connections: () => [...pairs].map(({ client, head }) => ({ head, bytesToClient: client.bytesWritten })),
    stall() {
      stalled = true;
      for (const { client, upstream } of pairs) {
        upstream.unpipe(client);
        upstream.pause();
      }
    },
    resume() {
      stalled = false;
      for (const { client, upstream } of pairs) upstream.pipe(client);
    },
    hold(pattern: RegExp) {
      holding = pattern;
    },
    /** How many connections hold bytes back. */
    holdingConnections: () => [...pairs].filter(({ held }) => held).length,
    release() {
      holding = null;
      for (const pair of pairs) {
        for (const chunk of pair.held ?? []) pair.upstream.write(chunk);
        pair.held = null;
      }
    },
    async cut() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const { client, upstream } of pairs) {
        client.destroy();
        upstream.destroy();
      }
      pairs.clear();
      await closed;
    },
    async restore() {
      await listen(port);
    },
    async close() {
      for (const { client, upstream } of pairs) {
        client.destroy();
        upstream.destroy();
      }
      if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * The kernel's socket from `localPort` to `remotePort` on this machine, as Linux lists it in
 * /proc/net/tcp{,6}: its state (01 established, 04 FIN-WAIT-1, …) and the bytes it holds unsent.
 */
export function kernelSocket(localPort: number, remotePort: number): { state: string; unsentBytes: number } | undefined {
  const port = (address: string) => parseInt(address.split(':')[1]!, 16);
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6'].filter(existsSync)) {
    for (const line of readFileSync(file, 'utf8').trim().split('\n').slice(1)) {
      const [, local, remote, state, queues] = line.trim().split(/\s+/);
      if (port(local!) === localPort && port(remote!) === remotePort) return { state: state!, unsentBytes: parseInt(queues!.split(':')[0]!, 16) };
    }
  }
  return undefined;
}
