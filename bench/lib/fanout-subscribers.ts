// A fleet of live dashboards in its own process: N graphql-ws clients (one socket each) or N SSE
// streams (one HTTP connection each), all subscribed to toolStatusChanged on one thread. Driven by
// the bench over IPC.
import { performance } from 'node:perf_hooks';
import { setTimeout as pause } from 'node:timers/promises';
import WebSocket from 'ws';
import { summarize } from './stats.js';

const SUBSCRIPTION = /* GraphQL */ `
  subscription ToolStatus($threadId: ID!) {
    toolStatusChanged(threadId: $threadId) {
      __typename id runId role operationId sequence finishedSequence status startedAt finishedAt durationMs
      toolCallId name effectiveInput output error awaitingRunTerminal
    }
  }`;

const now = () => performance.timeOrigin + performance.now();

/**
 * Receipts in arrival order, in typed arrays: a million small objects kept for the summary would
 * make this process's garbage collector pause for long stretches while frames wait in its sockets,
 * and those pauses would be measured as the server's latency.
 */
class Receipts {
  length = 0;
  keys = new Int32Array(1024);
  at = new Float64Array(1024);
  statuses = new Uint8Array(1024);

  push(key: number, at: number, status: number) {
    if (this.length === this.keys.length) {
      const grow = <T extends Int32Array | Float64Array | Uint8Array>(array: T): T => {
        const larger = new (array.constructor as new (length: number) => T)(array.length * 2);
        larger.set(array);
        return larger;
      };
      this.keys = grow(this.keys);
      this.at = grow(this.at);
      this.statuses = grow(this.statuses);
    }
    this.keys[this.length] = key;
    this.at[this.length] = at;
    this.statuses[this.length] = status;
    this.length++;
  }
}

/** Tool call ids and statuses as small integers, shared by every subscriber. */
function interner() {
  const codes = new Map<string, number>();
  return (value: string) => {
    let code = codes.get(value);
    if (code === undefined) codes.set(value, (code = codes.size));
    return code;
  };
}
const toolCallKey = interner();
const statusCode = interner();

export type Transport = 'ws' | 'sse';

interface Subscriber {
  /** Ends the subscription and its connection. */
  stop(): Promise<void>;
  received: Receipts;
  total: number;
  /** Receipts of the measured events (tool call ids with the measured prefix). */
  measured: number;
  errors: string[];
}

export type FanoutRequest =
  | { command: 'start'; transport: Transport; url: string; token: string; threadId: string; subscribers: number; measuredPrefix: string }
  | { command: 'progress' }
  | { command: 'wait'; events: number; idleTimeoutMs: number }
  | { command: 'summarize'; expected: { toolCallId: string; status: string; committedAt: number | null; sentAt: number }[] }
  | { command: 'stop' };

let subscribers: Subscriber[] = [];

/** What each subscriber does with a result, whichever transport brought it. */
function receiver(subscriber: Subscriber, measuredPrefix: string) {
  return (result: { data?: any; errors?: unknown }, at: number) => {
    const audit = result.data?.toolStatusChanged;
    if (result.errors || !audit) return void subscriber.errors.push(JSON.stringify(result.errors ?? result));
    subscriber.total++;
    if (audit.toolCallId.startsWith(measuredPrefix)) subscriber.measured++;
    subscriber.received.push(toolCallKey(audit.toolCallId), at, statusCode(audit.status));
  };
}

/**
 * One graphql-ws subscription on its own socket, spoken directly over `ws` (graphql-transport-ws:
 * init, ack, subscribe, next…) rather than through graphql-ws's client. A thousand dashboards
 * share this one process, so what each frame costs here delays every later frame's receipt and
 * would be measured as the server's latency; the receipt is stamped before the frame is parsed.
 */
function overWebSocket(url: string, token: string, threadId: string, subscriber: Subscriber, receive: ReturnType<typeof receiver>, connected: () => void) {
  const socket = new WebSocket(url, 'graphql-transport-ws');
  const fail = (message: string) => subscriber.errors.push(message);
  socket.on('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${token}` } })));
  socket.on('message', (data) => {
    const at = now();
    const message = JSON.parse(String(data)) as { type: string; payload?: any };
    switch (message.type) {
      case 'next':
        return receive(message.payload, at);
      case 'connection_ack':
        socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: SUBSCRIPTION, variables: { threadId } } }));
        return connected();
      case 'ping':
        return socket.send(JSON.stringify({ type: 'pong' }));
      case 'pong':
        return;
      default:
        fail(`unexpected ${message.type}: ${JSON.stringify(message.payload ?? null)}`);
    }
  });
  socket.on('error', (error) => fail(error.message));
  socket.on('close', (code, reason) => {
    if (code !== 1000) fail(`socket closed: ${code} ${String(reason)}`);
  });
  return async () => {
    if (socket.readyState === WebSocket.CLOSED) return;
    const closed = new Promise((resolve) => socket.once('close', resolve));
    socket.close(1000);
    await closed;
  };
}

/** One SSE stream (GraphQL over SSE, "distinct connections" mode, as yoga serves it). */
function overSse(url: string, token: string, threadId: string, subscriber: Subscriber, receive: ReturnType<typeof receiver>, connected: () => void) {
  const abort = new AbortController();
  const target = `${url}?query=${encodeURIComponent(SUBSCRIPTION)}&variables=${encodeURIComponent(JSON.stringify({ threadId }))}`;
  void (async () => {
    const response = await fetch(target, { headers: { accept: 'text/event-stream', authorization: `Bearer ${token}` }, signal: abort.signal });
    if (!response.ok || !response.body) throw new Error(`SSE subscription answered HTTP ${response.status}`);
    connected();
    const decoder = new TextDecoder();
    let pending = '';
    const reader = response.body.getReader();
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      const at = now();
      pending += decoder.decode(chunk.value, { stream: true });
      let end;
      while ((end = pending.indexOf('\n\n')) >= 0) {
        const message = pending.slice(0, end);
        pending = pending.slice(end + 2);
        if (!message.startsWith('event: next')) continue;
        const data = message.split('\n').filter((line) => line.startsWith('data: ')).map((line) => line.slice(6)).join('\n');
        receive(JSON.parse(data), at);
      }
    }
  })().catch((error: unknown) => {
    if (!abort.signal.aborted) subscriber.errors.push(String((error as Error)?.message ?? error));
  });
  return async () => abort.abort();
}

async function start(transport: Transport, url: string, token: string, threadId: string, count: number, measuredPrefix: string) {
  let connected = 0;
  subscribers = [];
  const open = transport === 'ws' ? overWebSocket : overSse;
  for (let index = 0; index < count; index++) {
    const subscriber: Subscriber = { stop: async () => {}, received: new Receipts(), total: 0, measured: 0, errors: [] };
    subscriber.stop = open(url, token, threadId, subscriber, receiver(subscriber, measuredPrefix), () => connected++);
    subscribers.push(subscriber);
    // Open connections in small bursts rather than 1,000 handshakes at once.
    if (index % 50 === 49) await pause(20);
  }
  const deadline = Date.now() + 60_000;
  while (connected < count && Date.now() < deadline) await pause(50);
  return { connected };
}

const progress = () => ({
  minTotal: Math.min(...subscribers.map((s) => s.total)),
  maxTotal: Math.max(...subscribers.map((s) => s.total)),
  errors: subscribers.reduce((sum, s) => sum + s.errors.length, 0),
  firstError: subscribers.find((s) => s.errors.length)?.errors[0],
});

/** Until every subscriber has every measured event, or nothing arrives for `idleTimeoutMs`. */
async function wait(events: number, idleTimeoutMs: number) {
  let last = -1;
  let lastChange = Date.now();
  for (;;) {
    const delivered = subscribers.reduce((sum, s) => sum + s.measured, 0);
    if (delivered >= events * subscribers.length) return { complete: true };
    if (delivered !== last) {
      last = delivered;
      lastChange = Date.now();
    } else if (Date.now() - lastChange > idleTimeoutMs) {
      return { complete: false };
    }
    await pause(100);
  }
}

function summarizeDeliveries(expected: { toolCallId: string; status: string; committedAt: number | null; sentAt: number }[]) {
  const fromCommit: number[] = [];
  const fromSend: number[] = [];
  let delivered = 0;
  let otherStatus = 0;
  let fewest = Infinity;
  // Per event, its first receipt by any subscriber: the server's delay before it sends, plus any
  // backlog of the previous event this process still had to read.
  const firstReceipt = expected.map(() => Infinity);
  // The i-th expected event of a tool call is its i-th receipt: one socket delivers in order.
  for (const subscriber of subscribers) {
    // toolCallId key -> indexes of its receipts, in arrival order.
    const byKey = new Map<number, number[]>();
    const { received } = subscriber;
    for (let i = 0; i < received.length; i++) {
      const key = received.keys[i]!;
      let list = byKey.get(key);
      if (!list) byKey.set(key, (list = []));
      list.push(i);
    }
    const seen = new Map<string, number>();
    let mine = 0;
    for (const [eventIndex, event] of expected.entries()) {
      const index = seen.get(event.toolCallId) ?? 0;
      seen.set(event.toolCallId, index + 1);
      const at = byKey.get(toolCallKey(event.toolCallId))?.[index];
      if (at === undefined) continue;
      const receipt = { at: received.at[at]!, status: received.statuses[at]! };
      mine++;
      if (receipt.status !== statusCode(event.status)) otherStatus++;
      if (event.committedAt !== null) {
        fromCommit.push(receipt.at - event.committedAt);
        firstReceipt[eventIndex] = Math.min(firstReceipt[eventIndex]!, receipt.at - event.committedAt);
      }
      fromSend.push(receipt.at - event.sentAt);
    }
    delivered += mine;
    fewest = Math.min(fewest, mine);
  }
  return {
    subscribers: subscribers.length,
    events: expected.length,
    expectedDeliveries: expected.length * subscribers.length,
    delivered,
    fewestPerSubscriber: fewest,
    /** Payloads whose status was not the event's: the row is re-read at delivery, after later writes. */
    payloadsWithLaterStatus: otherStatus,
    fromCommitMs: fromCommit.length ? summarize(fromCommit) : null,
    fromSendMs: summarize(fromSend),
    firstReceiptMs: fromCommit.length ? summarize(firstReceipt.filter(Number.isFinite)) : null,
    errors: progress().errors,
    firstError: progress().firstError,
  };
}

process.on('message', async (request: FanoutRequest & { id: number }) => {
  let body: unknown;
  switch (request.command) {
    case 'start':
      body = await start(request.transport, request.url, request.token, request.threadId, request.subscribers, request.measuredPrefix);
      break;
    case 'progress':
      body = progress();
      break;
    case 'wait':
      body = await wait(request.events, request.idleTimeoutMs);
      break;
    case 'summarize':
      body = summarizeDeliveries(request.expected);
      break;
    case 'stop':
      await Promise.all(subscribers.map((s) => s.stop()));
      process.send?.({ id: request.id, body: true });
      process.exit(0);
  }
  process.send?.({ id: request.id, body });
});
// Without the bench there is nothing to report to.
process.once('disconnect', () => process.exit(0));
