// Deletes again, after a restore, the threads deleted since the backup started (docs/operations.md,
// "Backup and restore"): the backup holds them, so the restore brings them back. The servers' logs
// name each deletion (`"event":"thread_deleted"`, by request, retention or an abandoned deletion
// finished); every one whose receipt is not older than the backup's start is deleted again, its new
// receipt printed as a JSON line, and one already gone is said so. Run it again after an
// interruption: it goes on with what is left.
//
//   AUDIT_ADMIN_TOKEN=<admin or superadmin token> npx tsx examples/operations/redo-deletions.ts <when the backup started> <server logs since then>...
//
// <when the backup started>: RFC 3339, e.g. 2026-12-06T02:00:00Z (take it early rather than late:
// a deletion done again is only "already gone"). AUDIT_URL defaults to http://127.0.0.1:4000/graphql.
import { readFileSync } from 'node:fs';

const [since, ...logs] = process.argv.slice(2);
const token = process.env.AUDIT_ADMIN_TOKEN;
const backupStarted = Date.parse(since ?? '');
if (!token || Number.isNaN(backupStarted) || logs.length === 0) {
  console.error('usage: AUDIT_ADMIN_TOKEN=<admin or superadmin token> npx tsx examples/operations/redo-deletions.ts <when the backup started> <server logs since then>...');
  process.exit(2);
}
const url = process.env.AUDIT_URL ?? 'http://127.0.0.1:4000/graphql';

const threadIds = new Set<string>();
for (const file of logs) {
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line.includes('"thread_deleted"')) continue;
    const entry = JSON.parse(line) as { event?: string; threadId?: string; verifiedAt?: string };
    if (entry.event === 'thread_deleted' && entry.threadId && Date.parse(entry.verifiedAt ?? '') >= backupStarted) threadIds.add(entry.threadId);
  }
}

const DELETE = `mutation($id: ID!) { deleteThread(id: $id) { threadId runs audits toolCalls messages verifiedAt } }`;
for (const id of threadIds) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query: DELETE, variables: { id } }),
  });
  const { data, errors } = (await response.json()) as { data?: { deleteThread: unknown }; errors?: { message: string; extensions?: { code?: string } }[] };
  if (errors?.[0]?.extensions?.code === 'NOT_FOUND') console.log(`${id}: already gone`);
  else if (errors?.length) throw new Error(errors.map((error) => `${error.extensions?.code}: ${error.message}`).join('; '));
  else console.log(JSON.stringify(data!.deleteThread));
}
console.error(`${threadIds.size} deletions since ${since} done again`);
