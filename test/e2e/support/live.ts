import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { withTimeout } from './wait.js';

/** The events of one subscription, as they arrive. */
export interface LiveStream<T = any> {
  readonly events: T[];
  /** Resolves with the events once `done(events)` holds; rejects if the stream fails or `timeoutMs` pass. */
  waitUntil(done: (events: T[]) => boolean, timeoutMs?: number): Promise<T[]>;
  /** Resolves with the events once at least `count` have arrived. */
  waitFor(count: number, timeoutMs?: number): Promise<T[]>;
}

/** A graphql-ws connection with the token in `connectionParams.authorization`, as a dashboard opens it. */
export class LiveConnection {
  private readonly client: Client;
  private readonly stops: (() => void)[] = [];

  private constructor(client: Client) {
    this.client = client;
  }

  /** Opens the socket and waits for the server's connection_ack. */
  static async open(wsUrl: string, token: string, timeoutMs = 15_000): Promise<LiveConnection> {
    let client: Client | undefined;
    const acknowledged = new Promise<void>((resolve, reject) => {
      client = createClient({
        url: wsUrl,
        webSocketImpl: WebSocket,
        connectionParams: { authorization: `Bearer ${token}` },
        lazy: false,
        retryAttempts: 0,
        on: { connected: () => resolve(), closed: (event) => reject(new Error(`the socket closed: ${JSON.stringify(event)}`)) },
        onNonLazyError: reject,
      });
    });
    await withTimeout(acknowledged, timeoutMs, () => 'no connection_ack').catch(async (error: unknown) => {
      await client!.dispose();
      throw error;
    });
    return new LiveConnection(client!);
  }

  /** Subscribes to `query`; every `data[field]` becomes an event. */
  subscribe<T = any>(query: string, variables: Record<string, unknown>): LiveStream<T> {
    const events: T[] = [];
    let failure: unknown;
    let done = false;
    const waiters = new Set<() => void>();
    const wake = () => waiters.forEach((waiter) => waiter());

    this.stops.push(
      this.client.subscribe<Record<string, T>>(
        { query, variables },
        {
          next: (result) => {
            if (result.errors?.length) failure = new Error(`subscription error: ${JSON.stringify(result.errors)}`);
            else events.push(Object.values(result.data ?? {})[0]!);
            wake();
          },
          error: (error) => {
            failure = error instanceof Error ? error : new Error(`subscription failed: ${JSON.stringify(error)}`);
            wake();
          },
          complete: () => {
            done = true;
            wake();
          },
        },
      ),
    );

    const waitUntil = (reached: (events: T[]) => boolean, timeoutMs = 15_000) => {
      let check = () => {};
      const settled = new Promise<T[]>((resolve, reject) => {
        check = () => {
          if (reached(events)) resolve(events);
          else if (failure) reject(failure);
          else if (done) reject(new Error(`the subscription completed after ${events.length} events`));
        };
        waiters.add(check);
        check();
      });
      return withTimeout(settled, timeoutMs, () => `still waiting after ${events.length} events: ${JSON.stringify(events)}`).finally(
        () => waiters.delete(check),
      );
    };
    return { events, waitUntil, waitFor: (count, timeoutMs) => waitUntil(() => events.length >= count, timeoutMs) };
  }

  async close(): Promise<void> {
    this.stops.forEach((stop) => stop());
    await this.client.dispose();
  }
}

/**
 * graphql-ws never confirms that a subscription is listening, so the first event proves it:
 * `create` makes something whose event `stream` carries with the returned id; until one is
 * delivered, each is handed to `discard` and another one created. Returns the delivered id.
 */
export async function firstDelivered(
  stream: LiveStream<{ id: string }>,
  create: () => Promise<string>,
  discard: (id: string) => Promise<unknown>,
  attempts = 20,
): Promise<string> {
  for (let attempt = 1; attempt <= attempts; attempt++) {
    const id = await create();
    const delivered = await stream.waitUntil((events) => events.some((event) => event.id === id), 1_000).then(
      () => true,
      () => false,
    );
    if (delivered) return id;
    await discard(id);
  }
  throw new Error(`the subscription delivered none of ${attempts} probes: ${JSON.stringify(stream.events)}`);
}
