import type { FormattedExecutionResult } from 'graphql';
import { WebSocket } from 'ws';
import type { Config } from '../config.js';

/**
 * graphql-ws awaits every send, so a client that stops reading stalls only its own streams, each
 * pinning at most one unsent result; but one connection may carry many subscriptions, and each
 * result may be megabytes. Past this many unsent bytes the connection is dropped.
 */
export const maxUnsentBytes = (config: Config) => Math.max(16 * 1024 * 1024, 16 * config.maxJsonBytes);

/**
 * What graphql-ws is handed as a `next` payload whose JSON the socket already holds. graphql-ws
 * writes `{"id":…,"type":"next","payload":…}`, in that order, so the frame ends with this tail
 * and its id (as JSON) sits between the head and `,"type"`.
 */
const PLACEHOLDER = Object.freeze({ sharedResult: true }) as FormattedExecutionResult;
const PLACEHOLDER_TAIL = `,"payload":${JSON.stringify(PLACEHOLDER)}}`;
const HEAD = '{"id":';
const AFTER_ID = ',"type":"next"';

/** Each result object is serialized once, however many sockets send it. */
const serialized = new WeakMap<object, string>();
function jsonOf(result: object): string {
  let json = serialized.get(result);
  if (json === undefined) serialized.set(result, (json = JSON.stringify(result)));
  return json;
}

export interface ServerWebSocket extends WebSocket {
  /**
   * For graphql-ws's `onNext`: the payload to let it send in place of `result`. One result is
   * shared by every identical subscription (shared-subscriptions.ts), and graphql-ws would
   * serialize it once per subscriber; here it is serialized once and spliced into each frame.
   */
  sharedPayload(subscriptionId: string, result: object): FormattedExecutionResult;
}

/**
 * The server's WebSocket class: checked right after each send, so a connection never pins much
 * more than `limit` (the send that crossed it, at most).
 */
export function boundedWebSocket(limit: number): typeof WebSocket {
  return class BoundedWebSocket extends WebSocket implements ServerWebSocket {
    /** Serialized payloads by subscription id (as JSON), each waiting for its one `next` frame. */
    private readonly payloads = new Map<string, string>();

    sharedPayload(subscriptionId: string, result: object): FormattedExecutionResult {
      this.payloads.set(JSON.stringify(subscriptionId), jsonOf(result));
      return PLACEHOLDER;
    }

    override send(...args: unknown[]): void {
      const [data] = args;
      if (this.payloads.size > 0 && typeof data === 'string' && data.startsWith(HEAD) && data.endsWith(PLACEHOLDER_TAIL)) {
        const id = data.slice(HEAD.length, data.indexOf(AFTER_ID));
        const json = this.payloads.get(id);
        if (json !== undefined) {
          this.payloads.delete(id);
          args[0] = `${data.slice(0, -PLACEHOLDER_TAIL.length)},"payload":${json}}`;
        }
      }
      (super.send as (...args: unknown[]) => void)(...args);
      if (this.bufferedAmount > limit) {
        console.warn(`[realtime] dropping a WebSocket client that stopped reading (${this.bufferedAmount} bytes unsent)`);
        this.terminate();
      }
    }
  };
}
