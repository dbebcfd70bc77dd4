// The dashboards of bench/dashboards.ts in a process of their own, driven over IPC: for each
// principal one graphql-ws socket carrying `per` identical toolActivity subscriptions. Agents and
// dashboards are separate processes wherever this server runs; in the writers' process the
// subscribers parsed a thousand views a second between the writers' answers (bench/README.md,
// run DL1, compares the two layouts).
import { performance } from 'node:perf_hooks';
import WebSocket from 'ws';

const VIEW = `subscription { toolActivity(windowSeconds: 3600) { at buckets { started completed failed otherEnded } } }`;

/** The clock both processes stamp with: milliseconds since the epoch, sub-millisecond. */
export const now = () => performance.timeOrigin + performance.now();

/** One view's arrival at a subscription: when (now()), the starts and ends its buckets count, its `at`. */
export interface Arrival {
  at: number;
  total: number;
  viewAt: string;
}

/** One principal's dashboard: `per` identical subscriptions on one socket. */
function dashboard(url: string, token: string, per: number) {
  const arrivals: Arrival[][] = Array.from({ length: per }, () => []);
  const errors: string[] = [];
  const socket = new WebSocket(url, 'graphql-transport-ws');
  socket.on('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${token}` } })));
  socket.on('message', (data) => {
    const at = now(); // stamped before parsing: a frame's cost here is not the server's latency
    const message = JSON.parse(String(data)) as { id?: string; type: string; payload?: any };
    if (message.type === 'connection_ack') {
      for (let k = 0; k < per; k++) socket.send(JSON.stringify({ id: String(k), type: 'subscribe', payload: { query: VIEW } }));
    } else if (message.type === 'next') {
      const view = message.payload?.data?.toolActivity;
      if (!view) return void errors.push(JSON.stringify(message.payload?.errors ?? message.payload));
      let total = 0;
      for (const bucket of view.buckets) total += bucket.started + bucket.completed + bucket.failed + bucket.otherEnded;
      arrivals[Number(message.id)]!.push({ at, total, viewAt: view.at });
    } else if (message.type === 'ping') socket.send(JSON.stringify({ type: 'pong' }));
    else if (message.type !== 'pong') errors.push(`${message.type}: ${JSON.stringify(message.payload ?? null)}`);
  });
  socket.on('error', (error) => errors.push(error.message));
  return {
    arrivals,
    errors,
    ready: () => arrivals.every((list) => list.length > 0),
    close: () =>
      new Promise<void>((resolve) => {
        if (socket.readyState === WebSocket.CLOSED) return resolve();
        socket.once('close', () => resolve());
        socket.close(1000);
      }),
  };
}

export type DashboardRequest =
  /** Opens a dashboard per token; answers once each subscription has its first view, with each dashboard's first total. */
  | { command: 'start'; url: string; tokens: string[]; per: number; timeoutMs: number }
  /** Every arrival so far, by dashboard and subscription, and the errors. */
  | { command: 'arrivals' }
  /** This process's CPU seconds so far. */
  | { command: 'cpu' }
  | { command: 'stop' };

export interface Arrivals {
  arrivals: Arrival[][][];
  errors: string[];
}

let dashboards: ReturnType<typeof dashboard>[] = [];

const answer = async (request: DashboardRequest): Promise<unknown> => {
  switch (request.command) {
    case 'start': {
      dashboards = request.tokens.map((token) => dashboard(request.url, token, request.per));
      const deadline = Date.now() + request.timeoutMs;
      while (!dashboards.every((d) => d.ready())) {
        if (Date.now() > deadline) throw new Error(`dashboards not ready: ${dashboards.flatMap((d) => d.errors).slice(0, 3).join('; ')}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      return dashboards.map((d) => d.arrivals[0]![0]!.total);
    }
    case 'arrivals':
      return { arrivals: dashboards.map((d) => d.arrivals), errors: dashboards.flatMap((d) => d.errors) } satisfies Arrivals;
    case 'cpu': {
      const { user, system } = process.cpuUsage();
      return (user + system) / 1e6;
    }
    case 'stop':
      await Promise.all(dashboards.map((d) => d.close()));
      dashboards = [];
      return true;
  }
};

if (process.send) {
  process.on('message', (request: DashboardRequest & { id: number }) => {
    answer(request).then(
      (body) => {
        process.send!({ id: request.id, body });
        if (request.command === 'stop') process.disconnect();
      },
      (error: Error) => process.send!({ id: request.id, body: { error: error.message } }),
    );
  });
}
