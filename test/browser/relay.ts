import { connect, createServer, type Server, type Socket } from 'node:net';

/** A TCP relay in front of the server, so a test can cut a browser's connections and restore them. */
export class Relay {
  private readonly sockets = new Set<Socket>();
  private cut = false;
  private readonly server: Server;
  constructor(private readonly targetPort: number) {
    this.server = createServer((client) => {
      if (this.cut) return void client.destroy();
      const upstream = connect(this.targetPort, '127.0.0.1');
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => {});
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
  }
  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
  }
  disconnect() {
    this.cut = true;
    this.sockets.forEach((socket) => socket.destroy());
  }
  reconnect() {
    this.cut = false;
  }
  close() {
    this.disconnect();
    this.server.close();
  }
}
