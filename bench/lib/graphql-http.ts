import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';

export interface GraphQLResult<T = any> {
  data?: T | null;
  errors?: { message: string; extensions?: { code?: string } }[];
}

/**
 * GraphQL over HTTP with keep-alive connections: undici's Pool, the leanest HTTP client for Node
 * (≈½ the CPU per request of `http.request` here), so the bench process spends as little of the
 * shared CPU as possible on the workers' side of the wire.
 */
export class GraphQLHttp {
  private pool: Pool;
  private readonly origin: string;
  private readonly path: string;
  private inFlight = 0;
  private lastDone = 0;
  /** Size of the last response body. */
  lastResponseBytes = 0;
  /** When the last response's last byte arrived (performance.now()), before the client parsed it. */
  lastReceivedAt = 0;

  constructor(url: string) {
    const target = new URL(url);
    this.origin = target.origin;
    this.path = target.pathname;
    this.pool = this.newPool();
  }

  // Idle connections are dropped well before the server's keep-alive timeout (5 s) can close them
  // under a request. Within a phase requests follow each other, so this costs a reconnect per
  // phase at most.
  private newPool() {
    return new Pool(this.origin, { keepAliveTimeout: 1000, keepAliveMaxTimeout: 1000, pipelining: 1 });
  }

  async post<T = any>(query: string, variables: Record<string, unknown>, token: string): Promise<GraphQLResult<T>> {
    // After a pause, new connections: the idle timer above cannot be trusted when this process's
    // event loop was blocked meanwhile (the PGlite floors run their WebAssembly here), and a
    // connection the server closed would fail the request ("other side closed").
    if (this.inFlight === 0 && Date.now() - this.lastDone > 1000) {
      void this.pool.destroy();
      this.pool = this.newPool();
    }
    this.inFlight++;
    try {
      const response = await this.pool.request({
        path: this.path,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/graphql-response+json, application/json',
          authorization: `Bearer ${token}`,
        },
        body: JSON.stringify({ query, variables }),
      });
      const text = await response.body.text();
      this.lastReceivedAt = performance.now();
      this.lastResponseBytes = Buffer.byteLength(text);
      try {
        return JSON.parse(text) as GraphQLResult<T>;
      } catch {
        throw new Error(`HTTP ${response.statusCode}: ${text.slice(0, 500)}`);
      }
    } finally {
      this.inFlight--;
      this.lastDone = Date.now();
    }
  }

  /** The result's data, or an error naming the operation and the GraphQL errors. */
  async must<T = any>(query: string, variables: Record<string, unknown>, token: string): Promise<T> {
    const result = await this.post<T>(query, variables, token);
    if (result.errors?.length || !result.data) {
      throw new Error(`GraphQL errors: ${JSON.stringify(result.errors ?? result)} for ${query.slice(0, 80)}`);
    }
    return result.data;
  }

  close() {
    void this.pool.destroy();
  }
}
