import { WebSocket } from 'ws';
import type { Config } from '../config.js';

/**
 * graphql-ws awaits every send, so a client that stops reading stalls only its own streams, each
 * pinning at most one unsent result; but one connection may carry many subscriptions, and each
 * result may be megabytes. Past this many unsent bytes the connection is dropped.
 */
export const maxUnsentBytes = (config: Config) => Math.max(16 * 1024 * 1024, 16 * config.maxJsonBytes);

/**
 * The server's WebSocket class: checked right after each send, so a connection never pins much
 * more than `limit` (the send that crossed it, at most).
 */
export function boundedWebSocket(limit: number): typeof WebSocket {
  return class BoundedWebSocket extends WebSocket {
    override send(...args: unknown[]): void {
      (super.send as (...args: unknown[]) => void)(...args);
      if (this.bufferedAmount > limit) {
        console.warn(`[realtime] dropping a WebSocket client that stopped reading (${this.bufferedAmount} bytes unsent)`);
        this.terminate();
      }
    }
  };
}
