// What a new user met in the docs (issue 42, "Docs, as a new user met them"), each kept from
// drifting back: the examples' one set of environment variables, the pages' claims checked
// against the code they describe, and a dropped graphql-ws connection explained in words.
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');

/** The environment variables a file reads: process.env.X, os.environ["X"] / .get("X"), ${X} in bash. */
function variablesRead(file: string): string[] {
  const text = read(file);
  const names = [
    ...text.matchAll(/process\.env\.([A-Z_]+)/g),
    ...text.matchAll(/os\.environ(?:\.get\(|\[)"([A-Z_]+)"/g),
    ...text.matchAll(/\$\{([A-Z_]+):[?-]/g),
  ].map((match) => match[1]!);
  return [...new Set(names)];
}

describe('the examples read one set of environment variables', () => {
  const files = readdirSync(join(ROOT, 'examples'), { recursive: true })
    .map(String)
    .filter((name) => /\.(ts|js|mjs|py|sh)$/.test(name))
    .map((name) => `examples/${name}`);
  const used = [...new Set(files.flatMap(variablesRead))].sort();

  it('every variable an example reads is an AUDIT_* one', () => {
    expect(used.length).toBeGreaterThan(3);
    expect(used.filter((name) => !name.startsWith('AUDIT_'))).toEqual([]);
  });

  it('docs/runtime-authors.md names each of them', () => {
    const guide = read('docs/runtime-authors.md');
    expect(used.filter((name) => !guide.includes(`\`${name}\``))).toEqual([]);
  });

  it('no page or test names another set', () => {
    const pages = ['README.md', 'docs/runtime-authors.md', 'docs/subscriptions.md', 'clients/python/README.md', 'test/docs/new-user-path.e2e.test.ts'];
    for (const page of pages) expect(read(page), page).not.toMatch(/\bAGENT_AUDIT_|(?<![A-Z_])(OWNER_TOKEN|WORKER_TOKEN|THREAD_ID)\b/);
  });
});

describe('the pages say what the code does', () => {
  it("README gives the printed tokens' lifetime that src/main.ts mints them with", () => {
    const hours = /const hours = '(\d+)h'/.exec(read('src/main.ts'))?.[1];
    expect(hours).toBeDefined();
    expect(read('README.md')).toContain(`token, valid for ${hours} hours`);
    const days = /expires: \{ type: 'string', default: '(\d+)d' \}/.exec(read('src/cli/token.ts'))?.[1];
    expect(read('README.md')).toContain(`whose tokens last ${days} days`);
  });

  it('docs/deletion.md carries no internal note and names the contract by its page', () => {
    const page = read('docs/deletion.md');
    expect(page).not.toMatch(/for the lead|words the contract would need/);
    expect(page).not.toContain('SEMANTICS.md');
    // A live run does not keep its thread from retention whatever the lease: the page says when.
    expect(page).not.toMatch(/live run is never old/);
    expect(page).toMatch(/`RETENTION_DAYS` shorter than a lease/);
  });

  it("docs/debug-ui.md claims equality in every selected field (what its test compares), not 'field for field'", () => {
    expect(read('docs/debug-ui.md')).toContain('in every selected field');
    expect(read('docs/debug-ui.md')).not.toContain('field for field');
  });

  it("docs/runtime-authors.md says an event for a run the worker does not hold is refused alone (test/batches/record-events.int.test.ts), not the batch", () => {
    const batches = read('docs/runtime-authors.md').split('### Batches: the fast way in')[1]!.split('\n## ')[0]!;
    expect(batches).not.toMatch(/anything else is `BAD_USER_INPUT`/);
    expect(batches).toMatch(/`LEASE_LOST`/);
    expect(batches).toMatch(/`NOT_FOUND`/);
  });

  it("docs/subscriptions.md: a subscription over graphql-ws's caps gets an `error` message (test/abuse/websocket-limits.e2e.test.ts), over SSE a `next` with errors", () => {
    const row = read('docs/subscriptions.md')
      .split('\n')
      .find((line) => line.includes('as many subscriptions as allowed'));
    expect(row).toBeDefined();
    const [, , graphqlWs, sse] = row!.split(' | ');
    expect(graphqlWs).toBe('an `error` message');
    expect(sse).toMatch(/`next` with `errors`, then `complete`/);
  });

  it("README's production install is the full `npm ci`, since the install steps need the dev dependencies, and says why `--omit=dev` fails", () => {
    const section = read('README.md').split('## PostgreSQL and Redis')[1]!.split('\n## ')[0]!;
    expect(section).toMatch(/install with `npm ci`/i);
    expect(section).toMatch(/not `npm ci --omit=dev`/);
    // What the page gives as the reasons: the Prisma CLI, a dev dependency, generates the database
    // client at install; the client package's `prepare` compiles it with the frameworks' types.
    const root = JSON.parse(read('package.json'));
    expect(root.devDependencies.prisma).toBeDefined();
    expect(root.dependencies.prisma).toBeUndefined();
    expect(JSON.parse(read('packages/client/package.json')).scripts).toMatchObject({ prepare: 'npm run build', build: 'tsc -p tsconfig.json' });
  });

  it('docs/subscriptions.md does not say the server serves live-thread.js, and says how a page gets it', () => {
    const page = read('docs/subscriptions.md');
    expect(page).not.toMatch(/A page the server serves can use this script/);
    expect(page).toMatch(/The server serves no page of yours and no\s+copy of this file/);
    expect(page).toMatch(/reverse proxy/);
    // The server's page policy forbids inline scripts, as the page says.
    expect(read('src/server/static-page.ts')).not.toMatch(/unsafe-inline'[^"]*script|script-src[^"]*unsafe-inline/);
  });

  it('packages/client/README.md says how to install a package that is not published, and that it is ES modules only', () => {
    const page = read('packages/client/README.md');
    expect(page).toMatch(/^## Install$/m);
    expect(page).toMatch(/npm pack --pack-destination \/tmp \.\/packages\/client/);
    expect(page).toContain('"type": "module"');
    const { version, type } = JSON.parse(read('packages/client/package.json')) as { version: string; type: string };
    expect(type).toBe('module');
    expect(page).toContain(`agent-audit-client-${version}.tgz`);
  });

  it("README's embedded memory settings are the server's", () => {
    const startParams = /export const serverStartParams = \[(.*)\];/.exec(read('src/db/pglite-start-params.mjs'))?.[1];
    expect(startParams).toContain("'shared_buffers=16MB'");
    expect(startParams).toContain("'maintenance_work_mem=16MB'");
    expect(read('README.md')).toMatch(/PGlite runs with 16 MB of shared buffers[\s\S]*`maintenance_work_mem` is 16 MB too/);
    expect(read('scripts/serve.sh')).toContain('--expose-gc');
    expect(read('README.md')).toMatch(/What you give up:/);
  });

  it('.gitignore keeps a Python virtual environment (.venv, as clients/python/README.md makes) out', () => {
    expect(read('.gitignore').split('\n')).toContain('.venv/');
  });
});

describe('the graphql-ws subscriber (docs/subscriptions.md) says why its connection dropped', () => {
  it('in words, never [object Object]', async () => {
    // A port nothing listens on: the connection is refused.
    const child = spawn(process.execPath, ['--import', 'tsx', 'examples/subscribers/graphql-ws.ts'], {
      cwd: ROOT,
      env: { ...process.env, AUDIT_OWNER_TOKEN: 'a-token', AUDIT_THREAD_ID: 'a-thread', AUDIT_WS_URL: 'ws://127.0.0.1:9/graphql' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    await new Promise<void>((resolve) => {
      child.stderr!.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
        if (stderr.includes('\n')) resolve();
      });
      child.once('exit', () => resolve());
    });
    child.kill('SIGKILL');
    expect(stderr.split('\n')[0]).toBe('disconnected (connect ECONNREFUSED 127.0.0.1:9); resubscribing after now');
  });
});
