import { createServer as createHttpServer } from 'node:http';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { answerWhileStarting } from '../../src/server/starting.js';

/**
 * A TCP relay in front of the server, so a test can cut a browser's connections and restore them,
 * or have them answered as by an instance that is starting.
 */
export class Relay {
  private readonly sockets = new Set<Socket>();
  /** Connections stall() left hanging, destroyed by close(). */
  private readonly stalled = new Set<Socket>();
  private cut = false;
  /** While set, new connections are answered by this instead of the server. */
  private stand: ReturnType<typeof createHttpServer> | null = null;
  private readonly server: Server;
  constructor(private targetPort: number) {
    this.server = createServer((client) => {
      if (this.cut) return void client.destroy();
      if (this.stand) {
        this.sockets.add(client);
        client.on('close', () => this.sockets.delete(client));
        return void this.stand.emit('connection', client);
      }
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
  /**
   * The network gone without a word (Wi-Fi dropped, a laptop moved to another network): open
   * connections carry nothing more either way, and are never closed; new ones are refused until
   * `reconnect()`. The stalled ones stay stalled, as a NAT that forgot them leaves them.
   */
  stall() {
    this.cut = true;
    for (const socket of this.sockets) {
      socket.unpipe();
      socket.pause();
      // Neither end hears of the other's close (the server cutting a connection it gets no pong on, say).
      socket.removeAllListeners('close');
      this.stalled.add(socket);
    }
    this.sockets.clear();
  }
  disconnect() {
    this.cut = true;
    this.sockets.forEach((socket) => socket.destroy());
  }
  /** Relays again, to `targetPort` when given (a restarted server's). */
  reconnect(targetPort = this.targetPort) {
    this.cut = false;
    this.stand = null;
    this.targetPort = targetPort;
  }
  /**
   * A deploy's start-up window: open connections go on, new ones get what an instance answers
   * while it starts (503 UNAVAILABLE with Retry-After, src/server/starting.ts) until `reconnect()`.
   */
  starting() {
    this.cut = false;
    this.stand = createHttpServer(answerWhileStarting);
  }
  close() {
    this.disconnect();
    this.stalled.forEach((socket) => socket.destroy());
    this.server.close();
  }
}
