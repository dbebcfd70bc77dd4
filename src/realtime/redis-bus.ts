import { randomUUID } from 'node:crypto';
import { Redis, ReplyError, type RedisOptions } from 'ioredis';
import { BIGINT_FIELDS } from '../db/sql.js';
import type { CommittedChange } from '../domain/events.js';
import { errorFields, log, outsideErrorFields } from '../log.js';
import { everythingChangedChannel, heldSignals, subscribedChannels } from './redis-subscriptions.js';

/**
 * Fail fast instead of queueing: while Redis is unreachable a command is rejected at once (no
 * offline queue growing in memory, no writer waiting). Redis only wakes instances up; the
 * database is the source of truth, so what a failed command would have said is found there.
 */
const FAIL_FAST: RedisOptions = {
  lazyConnect: true,
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  autoResubscribe: false,
  autoResendUnfulfilledCommands: false,
  retryStrategy: (attempt) => Math.min(attempt * 100, 1000),
};

/**
 * Changes published together travel in messages of about this size, so each change reaches the
 * other instances as committed (a wake-up without its changes is read from the database, where
 * an entity that changed again since is folded into its latest state).
 */
export const MESSAGE_BYTES = 1024 * 1024;
/** A change larger than this (above four MAX_JSON_BYTES values of the default 1 MiB) travels as a bare wake-up. */
export const MAX_CHANGE_BYTES = 16 * 1024 * 1024;

/** Redis as a wake-up channel: "thread T reached cursor C", with the committed changes when small. */
export interface WakeBus {
  publish(threadId: string, changes: CommittedChange[]): void;
  listen(threadId: string): void;
  unlisten(threadId: string): void;
  onMessage(listener: (threadId: string, cursor: bigint, changes: CommittedChange[] | null) => void): void;
  /** Called when both connections are back after an outage and the channels are subscribed again. */
  onRecovered(listener: () => void): void;
  /** Called when an outage begins (at most once until it ends). */
  onLost(listener: () => void): void;
  /** Called when another instance held more signals than it may while its Redis was away or refused them (heldSignals): any subscribed thread may have moved, any dashboard changed. */
  onEverythingChanged(listener: () => void): void;
  /** Wake-ups held unsent: threads, or 1 for "everything changed" (GET /metrics). */
  unsent(): number;
  /** Both connections up and every listened channel subscribed on the subscriber's current connection: wake-ups reach this instance. */
  healthy(): boolean;
  close(): Promise<void>;
}

// Row fields that JSON cannot carry as they are: revived by name, top-level only (JSON columns
// such as `input` or `output` are user data and stay as they were written). The BigInt fields
// are the row mapper's (db/sql.ts).
const DATE_FIELDS = new Set(['createdAt', 'startedAt', 'finishedAt', 'leaseExpiresAt', 'changedAt']);

interface Message {
  origin: string;
  threadId: string;
  cursor: string;
  changes?: { kind: 'audit' | 'run'; row: Record<string, unknown>; leaseOnly?: boolean }[];
}

const encodeRow = (row: object) =>
  Object.fromEntries(Object.entries(row).map(([key, value]) => [key, typeof value === 'bigint' ? value.toString() : value]));

function reviveRow(row: Record<string, unknown>) {
  const revived: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(row)) {
    revived[key] =
      value === null ? null : BIGINT_FIELDS.has(key) ? BigInt(value as string) : DATE_FIELDS.has(key) ? new Date(value as string) : value;
  }
  return revived;
}

/** The messages carrying `changes` (in commit order), each with its last change's cursor. */
export function encodeMessages(origin: string, threadId: string, changes: CommittedChange[]): { cursor: bigint; text: string }[] {
  const messages: { cursor: bigint; text: string }[] = [];
  let held: { cursor: bigint; encoded: string[]; bytes: number } | null = null;
  const flush = () => {
    if (held) {
      const text = `{"origin":${JSON.stringify(origin)},"threadId":${JSON.stringify(threadId)},"cursor":"${held.cursor}","changes":[${held.encoded.join(',')}]}`;
      messages.push({ cursor: held.cursor, text });
    }
    held = null;
  };
  for (const change of changes) {
    const encoded = JSON.stringify({ kind: change.kind, row: encodeRow(change.row), leaseOnly: change.kind === 'run' ? change.leaseOnly : undefined });
    const bytes = Buffer.byteLength(encoded);
    if (bytes > MAX_CHANGE_BYTES) {
      flush();
      messages.push({ cursor: change.cursor, text: JSON.stringify({ origin, threadId, cursor: change.cursor.toString() }) });
      continue;
    }
    if (held && held.bytes + bytes > MESSAGE_BYTES) flush();
    held ??= { cursor: change.cursor, encoded: [], bytes: 0 };
    held.cursor = change.cursor;
    held.encoded.push(encoded);
    held.bytes += bytes;
  }
  flush();
  return messages;
}

/** The message's cursor and changes, or null when it is not a wake-up for `threadId` (logged). */
export function decodeMessage(threadId: string, text: string): { origin: string; cursor: bigint; changes: CommittedChange[] | null } | null {
  try {
    const message = JSON.parse(text) as Message;
    if (message.threadId !== threadId) throw new Error(`it names thread ${String(message.threadId)}`);
    const cursor = BigInt(message.cursor);
    const changes =
      message.changes?.map(({ kind, row, leaseOnly }) => {
        const revived = reviveRow(row) as CommittedChange['row'];
        if (revived.threadId !== threadId || typeof revived.changeCursor !== 'bigint') throw new Error('a change of another thread');
        return { kind, threadId, row: revived, leaseOnly, cursor: revived.changeCursor, committedAt: revived.changedAt! } as CommittedChange;
      }) ?? null;
    return { origin: message.origin, cursor, changes };
  } catch (error) {
    log.error({ component: 'realtime', threadId, error: errorFields(error) }, 'dropped a Redis message');
    return null;
  }
}

/** The command Redis itself refused (its reply: an ACL without it, a Redis loading its data), or null when it could not be reached. */
function refusedCommand(error: unknown): string | null {
  if (!(error instanceof ReplyError)) return null;
  const name = (error as { command?: { name?: string } }).command?.name;
  return name ? name.toUpperCase() : 'a command';
}

/**
 * Logs an outage once when it begins (whichever connection meets it first, at start or later),
 * saying whether Redis could not be reached or refused a command, and once when it ends, saying
 * which of the two ended, not every retry.
 */
function outageLog(redis: string, lost: () => void) {
  let down = false;
  let refused: string | null = null;
  return {
    failed(error: unknown) {
      if (down) return;
      down = true;
      refused = refusedCommand(error);
      const message = refused
        ? `Redis refused ${refused}; subscribers read changes from the database until it accepts it`
        : 'Redis unreachable; subscribers read changes from the database until it is back';
      log.warn({ component: 'realtime', redis, error: outsideErrorFields(error) }, message);
      lost();
    },
    recovered() {
      if (!down) return;
      down = false;
      log.info({ component: 'realtime', redis }, refused ? `Redis accepts ${refused} again` : 'Redis is back');
    },
  };
}

/**
 * Two connections (a subscribing connection cannot publish), one channel per thread under
 * `prefix`, and the channel of "everything changed". Resolves after the first attempt to connect: a Redis unreachable then is an outage
 * that begins at start, as one later is. An outage never throws to writers: the threads whose
 * wake-up could not be published are held and published again (heldSignals).
 */
export async function connectRedisBus(url: string, prefix: string, maxUnsent?: number): Promise<WakeBus> {
  const origin = randomUUID();
  const publisher = new Redis(url, { ...FAIL_FAST, connectionName: 'audit-publisher' });
  const subscriber = new Redis(url, { ...FAIL_FAST, connectionName: 'audit-subscriber' });
  const lostListeners: (() => void)[] = [];
  const outage = outageLog(`${publisher.options.host}:${publisher.options.port}`, () => lostListeners.forEach((listener) => listener()));
  publisher.on('error', outage.failed);
  subscriber.on('error', outage.failed);
  const subscriptions = subscribedChannels(subscriber, outage.failed);
  const healthy = () => publisher.status === 'ready' && subscriptions.subscribed();

  const channelOf = (threadId: string) => `${prefix}thread:${threadId}`;
  const messageListeners: Parameters<WakeBus['onMessage']>[0][] = [];
  const recoveredListeners: (() => void)[] = [];
  const everythingListeners: (() => void)[] = [];
  /** Threads whose latest wake-up was not published, with that cursor. */
  const unsent: ReturnType<typeof heldSignals<bigint>> = heldSignals(publisher, {
    prefix,
    limit: maxUnsent,
    resend: (threadId, cursor) => send(threadId, JSON.stringify({ origin, threadId, cursor: cursor.toString() }), cursor),
    merge: (held, cursor) => (held > cursor ? held : cursor),
  });
  const send = (threadId: string, text: string, cursor: bigint) => unsent.publish(channelOf(threadId), text, threadId, cursor);

  subscriptions.add(everythingChangedChannel(prefix));
  subscriber.on('message', (channel: string, text: string) => {
    if (channel === everythingChangedChannel(prefix)) for (const listener of everythingListeners) listener();
    if (!channel.startsWith(`${prefix}thread:`)) return;
    const threadId = channel.slice(prefix.length + 'thread:'.length);
    const message = decodeMessage(threadId, text);
    if (!message || message.origin === origin) return;
    for (const listener of messageListeners) listener(threadId, message.cursor, message.changes);
  });

  const recovered = () => {
    if (!healthy()) return;
    outage.recovered();
    for (const listener of recoveredListeners) listener();
  };
  subscriptions.onSubscribed(recovered);
  publisher.on('ready', recovered);

  // Connected when it resolves, or retrying (every second at most) until Redis is there.
  await Promise.all([publisher.connect(), subscriber.connect()].map((connected) => connected.catch(() => {})));

  return {
    publish(threadId, changes) {
      for (const { text, cursor } of encodeMessages(origin, threadId, changes)) send(threadId, text, cursor);
    },
    listen(threadId) {
      subscriptions.add(channelOf(threadId));
    },
    unlisten(threadId) {
      subscriptions.remove(channelOf(threadId));
    },
    onMessage: (listener) => void messageListeners.push(listener),
    onRecovered: (listener) => void recoveredListeners.push(listener),
    onLost: (listener) => void lostListeners.push(listener),
    onEverythingChanged: (listener) => void everythingListeners.push(listener),
    unsent: unsent.count,
    healthy,
    async close() {
      unsent.close();
      await Promise.all([publisher, subscriber].map((client) => client.quit().catch(() => client.disconnect())));
    },
  };
}
