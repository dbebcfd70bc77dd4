// The embedded database's files belong to one process: two servers on one DATA_DIR each kept a
// copy of their own, both served, and one's writes were gone at the next start. A second server
// now refuses to start while the first runs; a directory left by a killed server is taken over.
import { describe, expect, it } from 'vitest';
import { onPostgres } from '../support/database.js';
import { startServer, storageForFile, tokenFor } from './support/server.js';

const storage = storageForFile();

async function createThread(url: string, title: string): Promise<void> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${await tokenFor('lock-owner', 'superadmin')}` },
    body: JSON.stringify({ query: 'mutation($title: String) { createThread(input: { title: $title }) { id } }', variables: { title } }),
  });
  expect((await response.json()).errors).toBeUndefined();
}

async function titles(url: string): Promise<string[]> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${await tokenFor('lock-owner', 'superadmin')}` },
    body: JSON.stringify({ query: '{ threads(first: 10) { edges { node { title } } } }' }),
  });
  return (await response.json()).data.threads.edges.map((edge: { node: { title: string } }) => edge.node.title).sort();
}

describe.skipIf(onPostgres)('one server per embedded DATA_DIR', () => {
  it('a second server on the same DATA_DIR refuses to start; after a stop, or a kill, the next one starts and has every write', { timeout: 400_000 }, async () => {
    const first = await startServer(storage());
    await createThread(first.url, 'from the first');
    await expect(startServer(storage())).rejects.toThrow(/exited \(1\)[\s\S]*DATA_DIR .* is in use by another server \(process \d+\)/);
    await createThread(first.url, 'still the first');
    expect(await first.stop('SIGKILL')).toBe('SIGKILL');

    // Killed: its mark is left behind, and the next server takes the directory over.
    const second = await startServer(storage());
    expect(await titles(second.url)).toEqual(['from the first', 'still the first']);
    expect(await second.stop('SIGTERM')).toBe(0);
    const third = await startServer(storage());
    expect(await titles(third.url)).toEqual(['from the first', 'still the first']);
  });
});
