/*
 * threadAudits(limit: 500) selecting every payload of 500 audits whose payloads are a few kB (an
 * input of ~2 kB, an output of ~3 kB, a small usage), answered in process through yoga's fetch by
 * this tree's server and by the code before (`--before <dir>`), alternated request by request
 * (which goes first swaps each round), each server on its own scratch database seeded alike. What
 * it answers: whether charging each payload's size before reading it (the timeline's rows without
 * payloads, then one statement for those within the budget) slows the normal read.
 *
 *   git worktree add /tmp/answer-before <rev> && ln -s "$PWD/node_modules" /tmp/answer-before/node_modules \
 *     && cp -a src/generated /tmp/answer-before/src/
 *   npx tsx bench/answer-payloads.ts --before /tmp/answer-before [--rounds 200] [--warmup 30]
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx bench/answer-payloads.ts --before /tmp/answer-before
 *
 * Prints each server's p50 and mean over the rounds and their ratio (now / before).
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { openScratchDatabase } from './lib/scratch.js';
import { round, summarize } from './lib/stats.js';

const { values: flags } = parseArgs({
  options: { before: { type: 'string' }, rounds: { type: 'string', default: '200' }, warmup: { type: 'string', default: '30' } },
});
if (!flags.before) throw new Error('--before <dir>: a checkout of the code to compare with (see the header)');
const ROUNDS = Number(flags.rounds);
const WARMUP = Number(flags.warmup);
const SECRET = 'bench-secret-that-is-long-enough-for-hs256';
const OWNER = 'bench-owner';
const AUDITS = 500;

const QUERY = `query($threadId: ID!) { threadAudits(threadId: $threadId, limit: 500) { truncated items {
  id status inputBytes outputBytes errorBytes
  ... on ModelAudit { model input output error usage }
} } }`;

interface Server {
  name: string;
  ask: () => Promise<number>;
  close: () => Promise<void>;
}

/** The server of the tree at `root`, on a scratch database holding one thread of AUDITS audits. */
async function startServer(name: string, root: string): Promise<Server> {
  const load = (path: string) => import(pathToFileURL(resolve(root, path)).href);
  const [{ loadConfig }, { buildApp }, { mintToken }] = await Promise.all([load('src/config.ts'), load('src/server/app.ts'), load('src/auth/jwt.ts')]);
  const scratch = await openScratchDatabase(`answer_${name}`);
  const config = loadConfig({ AUTH_JWT_SECRET: SECRET, DATA_DIR: ':memory:', LEASE_SWEEP_INTERVAL_MS: '3600000', LOG_LEVEL: 'warn' });
  const app = await buildApp(config, { database: scratch.db }); // migrates it
  const sql = scratch.db.sql;
  const [thread] = await sql.query<{ id: string }>(`INSERT INTO thread (id, owner_id, title) VALUES (gen_random_uuid(), $1, 'bench') RETURNING id`, [OWNER]);
  const [run] = await sql.query<{ id: string }>(
    `INSERT INTO run (id, thread_id, status, started_at, finished_at) VALUES (gen_random_uuid(), $1, 'COMPLETED', now(), now()) RETURNING id`,
    [thread!.id],
  );
  // Payloads of a few kB, different in each audit (as real prompts and answers are).
  await sql.query(
    `INSERT INTO message (id, thread_id, run_id, role, message_type, operation_id, name, sequence, status, started_at, finished_at, input, output, usage)
     SELECT gen_random_uuid(), $1, $2, 'ASSISTANT', 'model_audit', 'model-' || i, 'bench-model', i, 'COMPLETED', now(), now(),
       jsonb_build_object('messages', jsonb_build_array(jsonb_build_object('role', 'user', 'content', repeat(md5(i::text), 60)))),
       jsonb_build_object('content', repeat(md5((i + 1)::text), 90), 'finish', 'stop'),
       jsonb_build_object('inputTokens', i, 'outputTokens', 2 * i)
     FROM generate_series(1, ${AUDITS}) i`,
    [thread!.id, run!.id],
  );
  const token = await mintToken(SECRET, { sub: OWNER, role: 'superadmin' });
  const body = JSON.stringify({ query: QUERY, variables: { threadId: thread!.id } });
  return {
    name,
    async ask() {
      const started = performance.now();
      const response = await app.yoga.fetch('http://bench/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body,
      });
      const answer = (await response.json()) as { errors?: unknown; data?: { threadAudits: { items: unknown[] } } };
      const elapsed = performance.now() - started;
      if (answer.errors || answer.data?.threadAudits.items.length !== AUDITS) throw new Error(`${name}: ${JSON.stringify(answer).slice(0, 300)}`);
      return elapsed;
    },
    async close() {
      await app.stop();
      await scratch.drop();
    },
  };
}

const servers = [await startServer('before', flags.before), await startServer('now', '.')];
const times = new Map(servers.map((server) => [server.name, [] as number[]]));
for (let i = 0; i < WARMUP; i++) for (const server of servers) await server.ask();
for (let i = 0; i < ROUNDS; i++) {
  const order = i % 2 === 0 ? servers : [...servers].reverse();
  for (const server of order) times.get(server.name)!.push(await server.ask());
}
for (const server of servers) await server.close();

const [before, now] = [summarize(times.get('before')!), summarize(times.get('now')!)];
console.log(`backend: ${process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite'}, ${ROUNDS} rounds of threadAudits(limit: 500), every payload (~5 kB an audit)`);
console.log(`before: p50 ${round(before.p50)} ms, mean ${round(before.mean)} ms`);
console.log(`now:    p50 ${round(now.p50)} ms, mean ${round(now.mean)} ms`);
console.log(`ratio now / before: p50 ${round(now.p50 / before.p50)}, mean ${round(now.mean / before.mean)}`);
