// Live delivery with batches (issue 45, bench/live-batches.ts): S graphql-ws subscribers of
// threadChanges on each of the watched threads, in a process of their own, driven over IPC. Each
// receipt is stamped before its frame is parsed; a change's commit is its `committedAt` (the
// database clock when the change took its cursor, inside its transaction: at or before its COMMIT).
import { performance } from 'node:perf_hooks';
import WebSocket from 'ws';
import { summarize, type Summary } from './stats.js';

const THREAD_CHANGES = /* GraphQL */ `
  subscription Changes($threadId: ID!) {
    threadChanges(threadId: $threadId) { cursor committedAt }
  }`;

const now = () => performance.timeOrigin + performance.now();

/** The thread's counter a threadChanges cursor carries (base64url of `threadId:counter:databaseId`). */
export const counterOf = (cursor: string) => Number(Buffer.from(cursor, 'base64url').toString('latin1').split(':')[1]);

interface Subscriber {
  threadId: string;
  counters: number[];
  /** Receipt minus committedAt, ms, by receipt. */
  latencies: number[];
  errors: string[];
  stop(): Promise<void>;
}

let subscribers: Subscriber[] = [];

function subscribe(url: string, token: string, threadId: string, connected: () => void): Subscriber {
  const subscriber: Subscriber = { threadId, counters: [], latencies: [], errors: [], stop: async () => {} };
  const socket = new WebSocket(url, 'graphql-transport-ws');
  socket.on('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${token}` } })));
  socket.on('message', (data) => {
    const at = now();
    const message = JSON.parse(String(data)) as { type: string; payload?: any };
    if (message.type === 'next') {
      const change = message.payload?.data?.threadChanges;
      if (!change) return subscriber.errors.push(JSON.stringify(message.payload?.errors ?? message.payload));
      subscriber.counters.push(counterOf(change.cursor));
      subscriber.latencies.push(at - Date.parse(change.committedAt));
    } else if (message.type === 'connection_ack') {
      socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: THREAD_CHANGES, variables: { threadId } } }));
      connected();
    } else if (message.type === 'ping') socket.send(JSON.stringify({ type: 'pong' }));
    else if (message.type !== 'pong') subscriber.errors.push(`unexpected ${message.type}`);
  });
  socket.on('error', (error) => subscriber.errors.push(error.message));
  socket.on('close', (code) => {
    if (code !== 1000) subscriber.errors.push(`socket closed: ${code}`);
  });
  subscriber.stop = async () => {
    if (socket.readyState === WebSocket.CLOSED) return;
    const closed = new Promise((resolve) => socket.once('close', resolve));
    socket.close(1000);
    await closed;
  };
  return subscriber;
}

/** The measured window of one thread: the changes after `from` up to `to` (counters), every one committed. */
interface Window {
  threadId: string;
  from: number;
  to: number;
}

export interface Delivery {
  subscribers: number;
  /** Changes committed in the window, summed over threads; each subscriber of a thread should get each once. */
  changes: number;
  expectedDeliveries: number;
  delivered: number;
  lost: number;
  duplicated: number;
  outOfOrder: number;
  /** From committedAt to receipt, ms, over every delivery of the window. */
  fromCommitMs: Summary | null;
  errors: number;
  firstError?: string;
}

function inWindow(subscriber: Subscriber, windows: Window[]) {
  const window = windows.find((w) => w.threadId === subscriber.threadId);
  return { window, indexes: window ? subscriber.counters.flatMap((c, i) => (c > window.from && c <= window.to ? [i] : [])) : [] };
}

function summarizeDelivery(windows: Window[]): Delivery {
  let expectedDeliveries = 0;
  let delivered = 0;
  let lost = 0;
  let duplicated = 0;
  let outOfOrder = 0;
  const latencies: number[] = [];
  const errors = subscribers.flatMap((s) => s.errors);
  for (const subscriber of subscribers) {
    const { window, indexes } = inWindow(subscriber, windows);
    if (!window) continue;
    expectedDeliveries += window.to - window.from;
    const seen = new Set<number>();
    let last = -Infinity;
    for (const i of indexes) {
      const counter = subscriber.counters[i]!;
      delivered++;
      if (seen.has(counter)) duplicated++;
      else if (counter < last) outOfOrder++;
      seen.add(counter);
      last = Math.max(last, counter);
      latencies.push(subscriber.latencies[i]!);
    }
    lost += window.to - window.from - seen.size;
  }
  return {
    subscribers: subscribers.length,
    changes: windows.reduce((sum, w) => sum + (w.to - w.from), 0),
    expectedDeliveries,
    delivered,
    lost,
    duplicated,
    outOfOrder,
    fromCommitMs: latencies.length ? summarize(latencies) : null,
    errors: errors.length,
    ...(errors.length && { firstError: errors[0] }),
  };
}

export type LiveRequest =
  | { command: 'start'; url: string; token: string; threadIds: string[]; perThread: number }
  | { command: 'received'; threadId: string; counter: number }
  | { command: 'wait'; windows: Window[]; idleTimeoutMs: number }
  | { command: 'summarize'; windows: Window[] }
  | { command: 'stop' };

/** Whether every subscriber of each window's thread has received its last change. */
const complete = (windows: Window[]) =>
  subscribers.every((s) => {
    const window = windows.find((w) => w.threadId === s.threadId);
    return !window || s.counters.includes(window.to);
  });

process.on('message', async (request: LiveRequest & { id: number }) => {
  let body: unknown;
  switch (request.command) {
    case 'start': {
      let connected = 0;
      subscribers = request.threadIds.flatMap((threadId) =>
        Array.from({ length: request.perThread }, () => subscribe(request.url, request.token, threadId, () => connected++)),
      );
      const deadline = Date.now() + 30_000;
      while (connected < subscribers.length && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      body = { connected };
      break;
    }
    case 'received':
      // How many subscribers of the thread have received its change `counter` (the warm-up's check).
      body = subscribers.filter((s) => s.threadId === request.threadId && s.counters.includes(request.counter)).length;
      break;
    case 'wait': {
      let lastCount = -1;
      let lastChange = Date.now();
      for (;;) {
        if (complete(request.windows)) break;
        const count = subscribers.reduce((sum, s) => sum + s.counters.length, 0);
        if (count !== lastCount) [lastCount, lastChange] = [count, Date.now()];
        if (Date.now() - lastChange > request.idleTimeoutMs) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      body = { complete: complete(request.windows) };
      break;
    }
    case 'summarize':
      body = summarizeDelivery(request.windows);
      break;
    case 'stop':
      await Promise.all(subscribers.map((s) => s.stop()));
      subscribers = [];
      body = true;
      break;
  }
  process.send!({ id: request.id, body });
  if (request.command === 'stop') process.disconnect();
});
