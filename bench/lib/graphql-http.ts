import { Agent, request } from 'node:http';

export interface GraphQLResult<T = any> {
  data?: T | null;
  errors?: { message: string; extensions?: { code?: string } }[];
}

/**
 * GraphQL over HTTP with keep-alive sockets: a small client, so the bench process spends as
 * little of the shared CPU as possible on its side of the wire.
 */
export class GraphQLHttp {
  // Idle sockets are dropped before the server's keep-alive timeout (5 s) can close them under a request.
  private readonly agent = new Agent({ keepAlive: true, maxSockets: Infinity, timeout: 4000 });
  private readonly target: URL;
  /** Size of the last response body. */
  lastResponseBytes = 0;

  constructor(url: string) {
    this.target = new URL(url);
  }

  async post<T = any>(query: string, variables: Record<string, unknown>, token: string): Promise<GraphQLResult<T>> {
    const body = JSON.stringify({ query, variables });
    try {
      return await this.send<T>(body, token);
    } catch (error) {
      // A kept-alive socket the server closed just as the request went out: the request never
      // reached it, so sending it again is safe (Node's documented pattern).
      if ((error as { reusedSocket?: boolean }).reusedSocket && (error as NodeJS.ErrnoException).code === 'ECONNRESET') {
        return this.send<T>(body, token);
      }
      throw error;
    }
  }

  private send<T>(body: string, token: string): Promise<GraphQLResult<T>> {
    return new Promise((resolve, reject) => {
      const req = request(
        {
          agent: this.agent,
          host: this.target.hostname,
          port: this.target.port,
          path: this.target.pathname,
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: 'application/graphql-response+json, application/json',
            'content-length': Buffer.byteLength(body),
            authorization: `Bearer ${token}`,
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => {
            const body = Buffer.concat(chunks);
            this.lastResponseBytes = body.length;
            const text = body.toString('utf8');
            try {
              resolve(JSON.parse(text) as GraphQLResult<T>);
            } catch {
              reject(new Error(`HTTP ${res.statusCode}: ${text.slice(0, 500)}`));
            }
          });
          res.on('error', reject);
        },
      );
      req.on('error', (error) => reject(Object.assign(error, { reusedSocket: req.reusedSocket })));
      req.end(body);
    });
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
    this.agent.destroy();
  }
}
