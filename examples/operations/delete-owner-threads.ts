// Erases every thread of one owner (docs/deletion.md, "Erasing one person's threads"): pages
// `threads(ownerId:)` and deletes each thread found, printing each receipt as a JSON line, until
// the owner has none left. Run it again after an interruption: it starts over with what is left.
//
//   AUDIT_ADMIN_TOKEN=<admin or superadmin token> npx tsx examples/operations/delete-owner-threads.ts <owner sub>
//
// AUDIT_URL defaults to http://127.0.0.1:4000/graphql; `npm run -s token -- --sub ops --role admin` mints a token.
const ownerId = process.argv[2];
const token = process.env.AUDIT_ADMIN_TOKEN;
if (!ownerId || !token) {
  console.error('usage: AUDIT_ADMIN_TOKEN=<admin or superadmin token> npx tsx examples/operations/delete-owner-threads.ts <owner sub>');
  process.exit(2);
}
const url = process.env.AUDIT_URL ?? 'http://127.0.0.1:4000/graphql';

async function graphql<T>(query: string, variables: Record<string, unknown>): Promise<T> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
  });
  const { data, errors } = (await response.json()) as { data?: T; errors?: { message: string; extensions?: { code?: string } }[] };
  if (errors?.length) throw new Error(errors.map((error) => `${error.extensions?.code}: ${error.message}`).join('; '));
  return data!;
}

const THREADS = `query($ownerId: String!) { threads(ownerId: $ownerId, first: 100) { edges { node { id } } } }`;
const DELETE = `mutation($id: ID!) { deleteThread(id: $id) { threadId runs audits toolCalls messages verifiedAt } }`;

let deleted = 0;
// Always the first page: the threads deleted leave it, so it holds the next ones.
for (;;) {
  const { threads } = await graphql<{ threads: { edges: { node: { id: string } }[] } }>(THREADS, { ownerId });
  if (threads.edges.length === 0) break;
  for (const { node } of threads.edges) {
    const { deleteThread } = await graphql<{ deleteThread: Record<string, unknown> }>(DELETE, { id: node.id });
    console.log(JSON.stringify(deleteThread));
    deleted++;
  }
}
console.error(`${deleted} threads of ${ownerId} deleted`);
