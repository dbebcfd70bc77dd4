// A fleet of live dashboards in its own process: N graphql-ws clients, one socket each, all
// subscribed to toolStatusChanged on one thread. Driven by the bench over IPC.
import { performance } from 'node:perf_hooks';
import { setTimeout as pause } from 'node:timers/promises';
import { createClient, type Client } from 'graphql-ws';
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

interface Subscriber {
  client: Client;
  /** toolCallId -> receipt times and the status each payload carried, in arrival order. */
  received: Map<string, { at: number; status: string }[]>;
  total: number;
  /** Receipts of the measured events (tool call ids with the measured prefix). */
  measured: number;
  errors: string[];
}

export type FanoutRequest =
  | { command: 'start'; wsUrl: string; token: string; threadId: string; subscribers: number; measuredPrefix: string }
  | { command: 'progress' }
  | { command: 'wait'; events: number; idleTimeoutMs: number }
  | { command: 'summarize'; expected: { toolCallId: string; status: string; committedAt: number | null; sentAt: number }[] }
  | { command: 'stop' };

let subscribers: Subscriber[] = [];

async function start(wsUrl: string, token: string, threadId: string, count: number, measuredPrefix: string) {
  let connected = 0;
  subscribers = [];
  for (let index = 0; index < count; index++) {
    const subscriber: Subscriber = { client: null as unknown as Client, received: new Map(), total: 0, measured: 0, errors: [] };
    subscriber.client = createClient({
      url: wsUrl,
      webSocketImpl: WebSocket,
      connectionParams: { authorization: `Bearer ${token}` },
      lazy: false,
      retryAttempts: 0,
      on: { connected: () => connected++ },
    });
    subscriber.client.subscribe(
      { query: SUBSCRIPTION, variables: { threadId } },
      {
        next: (result) => {
          const at = now();
          const audit = (result.data as any)?.toolStatusChanged;
          if (result.errors || !audit) return void subscriber.errors.push(JSON.stringify(result.errors ?? result));
          subscriber.total++;
          if (audit.toolCallId.startsWith(measuredPrefix)) subscriber.measured++;
          let list = subscriber.received.get(audit.toolCallId);
          if (!list) subscriber.received.set(audit.toolCallId, (list = []));
          list.push({ at, status: audit.status });
        },
        error: (error) => subscriber.errors.push(String((error as Error)?.message ?? JSON.stringify(error))),
        complete: () => {},
      },
    );
    subscribers.push(subscriber);
    // Open sockets in small bursts rather than 1,000 handshakes at once.
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
  // The i-th expected event of a tool call is its i-th receipt: one socket delivers in order.
  for (const subscriber of subscribers) {
    const seen = new Map<string, number>();
    let mine = 0;
    for (const event of expected) {
      const index = seen.get(event.toolCallId) ?? 0;
      seen.set(event.toolCallId, index + 1);
      const receipt = subscriber.received.get(event.toolCallId)?.[index];
      if (!receipt) continue;
      mine++;
      if (receipt.status !== event.status) otherStatus++;
      if (event.committedAt !== null) fromCommit.push(receipt.at - event.committedAt);
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
    errors: progress().errors,
    firstError: progress().firstError,
  };
}

process.on('message', async (request: FanoutRequest & { id: number }) => {
  let body: unknown;
  switch (request.command) {
    case 'start':
      body = await start(request.wsUrl, request.token, request.threadId, request.subscribers, request.measuredPrefix);
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
      await Promise.all(subscribers.map((s) => s.client.dispose()));
      process.send?.({ id: request.id, body: true });
      process.exit(0);
  }
  process.send?.({ id: request.id, body });
});
// Without the bench there is nothing to report to.
process.once('disconnect', () => process.exit(0));
