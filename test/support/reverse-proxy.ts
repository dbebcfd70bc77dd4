import { createServer, request, type IncomingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A reverse proxy in front of the server (docs/operations.md, "Behind a reverse proxy"): the
 * server under `prefix` (`/audit`: the proxy's `/audit/x` is the server's `/x`, `/audit`
 * redirects to `/audit/`, and every other path is the proxy's own 404), `Host` rewritten to the
 * server's address (as nginx's default, `$proxy_host`, and Node proxies' `changeOrigin` do), and
 * the client's address, scheme and host in `X-Forwarded-For`, `X-Forwarded-Proto` (`proto`, as
 * when it terminates TLS) and `X-Forwarded-Host`. WebSocket upgrades are relayed.
 */
export async function startReverseProxy(serverUrl: string, { prefix = '', proto = 'http' }: { prefix?: string; proto?: string } = {}) {
  const target = new URL(serverUrl);
  const upstreamPath = (url: string | undefined): string | null => {
    const path = url ?? '/';
    if (prefix === '') return path;
    return path.startsWith(`${prefix}/`) ? path.slice(prefix.length) : null;
  };
  const forwarded = (headers: IncomingHttpHeaders, remoteAddress: string | undefined): IncomingHttpHeaders => ({
    ...headers,
    host: target.host,
    'x-forwarded-for': remoteAddress ?? '',
    'x-forwarded-proto': proto,
    'x-forwarded-host': headers.host,
  });
  const proxy = createServer((req, res) => {
    const path = upstreamPath(req.url);
    if (path === null) {
      if (prefix !== '' && req.url === prefix) return void res.writeHead(301, { location: `${prefix}/` }).end();
      return void res.writeHead(404, { 'content-type': 'text/plain' }).end('not found (the proxy)');
    }
    const upstream = request(
      { host: target.hostname, port: target.port, method: req.method, path, headers: forwarded(req.headers, req.socket.remoteAddress) },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => (res.headersSent ? res.destroy() : res.writeHead(502).end()));
    res.on('close', () => upstream.destroy());
    req.pipe(upstream);
  });
  const upgraded = new Set<{ destroy(): void }>();
  proxy.on('upgrade', (req, socket, head) => {
    upgraded.add(socket);
    socket.on('close', () => upgraded.delete(socket));
    const path = upstreamPath(req.url);
    if (path === null) return void socket.end('HTTP/1.1 404 Not Found\r\nconnection: close\r\n\r\n');
    const upstream = connect(Number(target.port), target.hostname, () => {
      const headers = forwarded(req.headers, req.socket.remoteAddress);
      const lines = Object.entries(headers).flatMap(([name, value]) => (Array.isArray(value) ? value : [value]).map((one) => `${name}: ${one}`));
      upstream.write(`${req.method} ${path} HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n`);
      upstream.write(head);
      upstream.pipe(socket).pipe(upstream);
    });
    for (const end of [socket, upstream]) end.on('error', () => (socket.destroy(), upstream.destroy()));
    socket.on('close', () => upstream.destroy());
    upstream.on('close', () => socket.destroy());
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  return {
    /** The proxy's origin; the server is at `${origin}${prefix}/`. */
    origin,
    close: () =>
      new Promise<void>((resolve) => {
        proxy.closeAllConnections();
        for (const socket of upgraded) socket.destroy();
        proxy.close(() => resolve());
      }),
  };
}
