// The fan-out floor, in its own process: a bare `ws` server that speaks just enough of
// graphql-transport-ws for the same graphql-ws clients, and pushes one ready-made `next` frame
// per subscriber for each event. No GraphQL, no database: what pushing N frames costs here.
import { createServer } from 'node:http';
import { performance } from 'node:perf_hooks';
import { WebSocketServer, type WebSocket } from 'ws';

const now = () => performance.timeOrigin + performance.now();
const subscriptions = new Map<WebSocket, string>();

const http = createServer();
const wss = new WebSocketServer({ server: http, path: '/graphql' });
wss.on('connection', (socket) => {
  socket.on('message', (data) => {
    const message = JSON.parse(String(data)) as { type: string; id?: string };
    if (message.type === 'connection_init') socket.send(JSON.stringify({ type: 'connection_ack' }));
    else if (message.type === 'subscribe') subscriptions.set(socket, message.id!);
    else if (message.type === 'ping') socket.send(JSON.stringify({ type: 'pong' }));
    else if (message.type === 'complete') subscriptions.delete(socket);
  });
  socket.on('close', () => subscriptions.delete(socket));
});

type Request = { id: number; command: 'listen' } | { id: number; command: 'broadcast'; audit: Record<string, unknown> } | { id: number; command: 'stop' };

process.on('message', (request: Request) => {
  const reply = (body: unknown) => process.send?.({ id: request.id, body });
  switch (request.command) {
    case 'listen':
      http.listen(0, '127.0.0.1', () => reply({ port: (http.address() as { port: number }).port }));
      return;
    case 'broadcast': {
      // The event's "commit": the moment the first frame is handed to a socket.
      const at = now();
      const cpu = process.cpuUsage();
      const payload = JSON.stringify({ data: { toolStatusChanged: request.audit } });
      for (const [socket, id] of subscriptions) socket.send(`{"id":${JSON.stringify(id)},"type":"next","payload":${payload}}`);
      const used = process.cpuUsage(cpu);
      reply({ at, subscribers: subscriptions.size, cpuUs: used.user + used.system });
      return;
    }
    case 'stop':
      for (const socket of subscriptions.keys()) socket.terminate();
      wss.close();
      http.close();
      reply(true);
      process.exit(0);
  }
});
process.once('disconnect', () => process.exit(0));
