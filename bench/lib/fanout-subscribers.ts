// A fleet of live dashboards in its own process: N graphql-ws clients (one socket each) or N SSE
// streams (one HTTP connection each), all subscribed to toolStatusChanged, or threadChanges, on one
// thread. Driven by the bench over IPC.
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
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

/** threadChanges (issue 20): every change with its cursor; tool audits carry what toolStatusChanged does. */
const THREAD_CHANGES = /* GraphQL */ `
  subscription Changes($threadId: ID!, $after: String) {
    threadChanges(threadId: $threadId, after: $after) {
      cursor committedAt
      audit { __typename id status ... on ToolAudit { toolCallId } }
      run { id status }
    }
  }`;

export type Stream = 'toolStatusChanged' | 'threadChanges';
let stream: Stream = 'toolStatusChanged';
const documentOf = (chosen: Stream) => (chosen === 'threadChanges' ? THREAD_CHANGES : SUBSCRIPTION);
const variablesOf = (threadId: string, subscriber: Subscriber) =>
  stream === 'threadChanges' && subscriber.lastCursor ? { threadId, after: subscriber.lastCursor } : { threadId };

const now = () => performance.timeOrigin + performance.now();

/**
 * Receipts in arrival order, in typed arrays: a million small objects kept for the summary would
 * make this process's garbage collector pause for long stretches while frames wait in its sockets,
 * and those pauses would be measured as the server's latency. Sized for a default run (1,000 events
 * and the warm-up): every subscriber outgrowing its arrays on the same event would be such a pause.
 */
class Receipts {
  length = 0;
  keys = new Int32Array(2048);
  at = new Float64Array(2048);
  statuses = new Uint8Array(2048);

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

/** A subscriber's applied view: entity key → status code, both interned integers (below). */
class View {
  private codes = new Uint8Array(1024);

  set(entity: number, status: number) {
    if (entity >= this.codes.length) {
      const larger = new Uint8Array(Math.max(entity + 1, this.codes.length * 2));
      larger.set(this.codes);
      this.codes = larger;
    }
    this.codes[entity] = status + 1;
  }

  get(entity: number): number | undefined {
    const code = this.codes[entity];
    return code ? code - 1 : undefined;
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
const entityKey = interner();

/** The thread's counter value a threadChanges cursor carries (base64url of `threadId:counter:databaseId`). */
const counterOf = (cursor: string) => Number(Buffer.from(cursor, 'base64url').toString('latin1').split(':')[1]);

export type Transport = 'ws' | 'sse';

interface Subscriber {
  /** Ends the subscription and its connection. */
  stop(): Promise<void>;
  received: Receipts;
  total: number;
  /** Receipts of the measured events (tool call ids with the measured prefix). */
  measured: number;
  errors: string[];
  /**
   * threadChanges: the last cursor received, cursors not above the one before (received twice or
   * going back), and the applied view. Integers, not the frames' strings, and the view in a
   * typed array rather than a Map: a thousand subscribers' copies of the strings would keep the
   * garbage collector busy, and a thousand Maps outgrowing their tables on the same change (every
   * subscriber applies the same changes) allocated megabytes at once; either pause here would be
   * measured as the server's latency.
   */
  lastCursor?: string;
  lastCounter: number;
  repeatedCursors: number;
  view: View;
  /** Resume storm: when this subscriber first received a change written after the drop. */
  liveAgainAt?: number;
}

export type FanoutRequest =
  | { command: 'start'; transport: Transport; url: string; token: string; threadId: string; subscribers: number; measuredPrefix: string; stream?: Stream; after?: string }
  | { command: 'drop-and-resume'; url: string; token: string; threadId: string; afterDropPrefix: string }
  | { command: 'storm-progress' }
  | { command: 'compare-views'; expected: Record<string, string> }
  | { command: 'integrity'; expected: { toolCallId: string; status: string }[]; perTool?: boolean }
  | { command: 'progress' }
  | { command: 'loop-delay' }
  | { command: 'wait'; events: number; idleTimeoutMs: number }
  | { command: 'summarize'; expected: { toolCallId: string; status: string; committedAt: number | null; sentAt: number }[] }
  | { command: 'stop' };

let subscribers: Subscriber[] = [];
const loopDelay = monitorEventLoopDelay({ resolution: 5 });
loopDelay.enable();

/** What each subscriber does with a result, whichever transport brought it. */
let afterDropPrefix: string | null = null;

function receiver(subscriber: Subscriber, measuredPrefix: string) {
  return (result: { data?: any; errors?: unknown }, at: number) => {
    const change = result.data?.threadChanges;
    if (change) {
      const counter = counterOf(change.cursor);
      if (counter <= subscriber.lastCounter) subscriber.repeatedCursors++;
      subscriber.lastCounter = counter;
      subscriber.lastCursor = change.cursor;
      const entity = change.audit ?? change.run;
      if (entity) subscriber.view.set(entityKey(entity.id), statusCode(entity.status));
      subscriber.total++;
      if (!change.audit?.toolCallId) return;
    }
    const audit = change ? change.audit : result.data?.toolStatusChanged;
    if (result.errors || !audit) return void subscriber.errors.push(JSON.stringify(result.errors ?? result));
    if (!change) subscriber.total++;
    if (afterDropPrefix && subscriber.liveAgainAt === undefined && audit.toolCallId.startsWith(afterDropPrefix)) subscriber.liveAgainAt = at;
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
        socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: documentOf(stream), variables: variablesOf(threadId, subscriber) } }));
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
  const target = `${url}?query=${encodeURIComponent(documentOf(stream))}&variables=${encodeURIComponent(JSON.stringify(variablesOf(threadId, subscriber)))}`;
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

let transportInUse: Transport = 'ws';
let prefixInUse = '';

async function start(transport: Transport, url: string, token: string, threadId: string, count: number, measuredPrefix: string, chosen: Stream, after?: string) {
  let connected = 0;
  subscribers = [];
  stream = chosen;
  transportInUse = transport;
  prefixInUse = measuredPrefix;
  const open = transport === 'ws' ? overWebSocket : overSse;
  for (let index = 0; index < count; index++) {
    const subscriber: Subscriber = {
      stop: async () => {}, received: new Receipts(), total: 0, measured: 0, errors: [], repeatedCursors: 0, view: new View(),
      lastCursor: after, lastCounter: after ? counterOf(after) : 0,
    };
    subscriber.stop = open(url, token, threadId, subscriber, receiver(subscriber, measuredPrefix), () => connected++);
    subscribers.push(subscriber);
    // At most 200 handshakes in flight: a burst past the server's listen backlog loses connections.
    const stuckAfter = Date.now() + 5_000;
    while (index + 1 - connected >= 200 && Date.now() < stuckAfter) await pause(5);
  }
  // Each subscription is a handshake, a token check and a thread read: 10,000 take a while.
  const deadline = Date.now() + 60_000 + count * 10;
  while (connected < count && Date.now() < deadline) await pause(50);
  return { connected };
}

/**
 * The resume storm: every subscriber drops its connection at once, then resumes with the last
 * cursor it received. Returns when every one is subscribed again.
 */
async function dropAndResume(url: string, token: string, threadId: string, prefix: string) {
  afterDropPrefix = prefix;
  const droppedAt = now();
  await Promise.all(subscribers.map((subscriber) => subscriber.stop()));
  let resubscribed = 0;
  const open = transportInUse === 'ws' ? overWebSocket : overSse;
  for (const subscriber of subscribers) {
    subscriber.liveAgainAt = undefined;
    subscriber.stop = open(url, token, threadId, subscriber, receiver(subscriber, prefixInUse), () => resubscribed++);
  }
  const deadline = Date.now() + 60_000;
  while (resubscribed < subscribers.length && Date.now() < deadline) await pause(20);
  return { droppedAt, resubscribedAt: now(), resubscribed };
}

const stormProgress = () => {
  const times = subscribers.map((s) => s.liveAgainAt).filter((at): at is number => at !== undefined);
  return { liveAgain: times.length, lastLiveAgainAt: times.length ? Math.max(...times) : null, errors: progress().errors, firstError: progress().firstError };
};

/** Every subscriber's applied view against the database's state (entity id → status). */
function compareViews(expected: Record<string, string>) {
  let missing = 0;
  let differing = 0;
  let subscribersOff = 0;
  for (const subscriber of subscribers) {
    let off = false;
    for (const [id, status] of Object.entries(expected)) {
      const seen = subscriber.view.get(entityKey(id));
      if (seen === undefined) missing++;
      else if (seen !== statusCode(status)) differing++;
      off ||= seen !== statusCode(status);
    }
    if (off) subscribersOff++;
  }
  return {
    subscribers: subscribers.length,
    entities: Object.keys(expected).length,
    missing,
    differing,
    subscribersOff,
    repeatedCursors: subscribers.reduce((sum, s) => sum + s.repeatedCursors, 0),
  };
}

/**
 * Lost, duplicated and out-of-order states per subscriber: `expected` is every measured state in
 * commit order (each tool RUNNING then COMPLETED). A receipt is out of order when a state
 * committed after it was received before it.
 */
/**
 * `expected` in commit order: then a state received after a later one is out of order. With
 * several writers the order of their commits is not known here: only each tool's own states are
 * checked for order (`perTool`), RUNNING before its terminal.
 */
function integrity(expected: { toolCallId: string; status: string }[], perTool = false) {
  const order = new Map<string, number>();
  expected.forEach((event, index) => order.set(`${toolCallKey(event.toolCallId)}:${statusCode(event.status)}`, index));
  // Each tool's RUNNING state and its terminal: a terminal received without its RUNNING was folded.
  const runningOf = new Map<number, number>();
  expected.forEach((event, index) => {
    const running = order.get(`${toolCallKey(event.toolCallId)}:${statusCode('RUNNING')}`);
    if (event.status !== 'RUNNING' && running !== undefined) runningOf.set(index, running);
  });
  let lost = 0;
  let folded = 0;
  let duplicated = 0;
  let outOfOrder = 0;
  let subscribersAffected = 0;
  const worst = { lost: 0, duplicated: 0, outOfOrder: 0 };
  for (const subscriber of subscribers) {
    const { received } = subscriber;
    const seen = new Set<number>();
    let latest = -1;
    const mine = { duplicated: 0, outOfOrder: 0 };
    for (let i = 0; i < received.length; i++) {
      const index = order.get(`${received.keys[i]}:${received.statuses[i]}`);
      if (index === undefined) continue;
      if (seen.has(index)) {
        mine.duplicated++;
        continue;
      }
      seen.add(index);
      if (perTool ? [...runningOf].some(([terminal, running]) => running === index && seen.has(terminal)) : index < latest) mine.outOfOrder++;
      latest = Math.max(latest, index);
    }
    for (const [terminal, running] of runningOf) if (seen.has(terminal) && !seen.has(running)) folded++;
    const mineLost = expected.length - seen.size;
    lost += mineLost;
    duplicated += mine.duplicated;
    outOfOrder += mine.outOfOrder;
    worst.lost = Math.max(worst.lost, mineLost);
    worst.duplicated = Math.max(worst.duplicated, mine.duplicated);
    worst.outOfOrder = Math.max(worst.outOfOrder, mine.outOfOrder);
    if (mineLost || mine.duplicated || mine.outOfOrder) subscribersAffected++;
  }
  return { subscribers: subscribers.length, states: expected.length, lost, folded, duplicated, outOfOrder, subscribersAffected, worstSubscriber: worst };
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

/**
 * The ten events whose last receipt came latest after their COMMIT: when (seconds into the run),
 * and their first and last receipt. Where a p99 comes from: a few events every subscriber got
 * late (a pause somewhere), or a spread.
 */
function slowest(expected: { committedAt: number | null }[], first: number[], last: number[]) {
  const start = expected[0]?.committedAt ?? 0;
  return expected
    .map((event, index) => ({ index, atSeconds: ((event.committedAt ?? start) - start) / 1000, firstMs: first[index]!, lastMs: last[index]! }))
    .filter((event) => Number.isFinite(event.lastMs))
    .sort((a, b) => b.lastMs - a.lastMs)
    .slice(0, 10)
    .map((event) => ({ ...event, atSeconds: Math.round(event.atSeconds * 100) / 100, firstMs: Math.round(event.firstMs * 10) / 10, lastMs: Math.round(event.lastMs * 10) / 10 }));
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
  const lastReceipt = expected.map(() => -Infinity);
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
        lastReceipt[eventIndex] = Math.max(lastReceipt[eventIndex]!, receipt.at - event.committedAt);
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
    slowestEvents: slowest(expected, firstReceipt, lastReceipt),
    errors: progress().errors,
    firstError: progress().firstError,
  };
}

process.on('message', async (request: FanoutRequest & { id: number }) => {
  let body: unknown;
  switch (request.command) {
    case 'start':
      body = await start(request.transport, request.url, request.token, request.threadId, request.subscribers, request.measuredPrefix, request.stream ?? 'toolStatusChanged', request.after);
      break;
    case 'drop-and-resume':
      body = await dropAndResume(request.url, request.token, request.threadId, request.afterDropPrefix);
      break;
    case 'storm-progress':
      body = stormProgress();
      break;
    case 'compare-views':
      body = compareViews(request.expected);
      break;
    case 'integrity':
      body = integrity(request.expected, request.perTool);
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
    case 'loop-delay':
      // The longest this process's event loop was late since the previous ask (its own pauses are
      // measured as the server's latency).
      body = loopDelay.max / 1e6;
      loopDelay.reset();
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
