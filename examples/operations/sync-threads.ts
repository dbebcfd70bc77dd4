// Copies the caller's threads into a warehouse, incrementally (docs/subscriptions.md, "Copying
// threads into a warehouse"). Each run prints what changed since the last one as JSON lines:
//   {"op":"upsert","kind":"thread"|"run"|"audit"|"toolCall"|"message","id":…,"threadId":…,"final":…,"row":{…}}
//   {"op":"delete","kind":"thread","id":…}   (deleted by its owner, an admin or retention: delete it and all its rows)
// and keeps its place (a cursor and the last message per thread) in the state file. Apply the
// lines by `id` (an upsert replaces the row); a run that stops halfway is run again and goes on
// from the last thread it finished, sending that thread's rows again at most. After a restore of
// the server's database, each thread it had copied is deleted and copied again from its start.
//
//   AUDIT_OWNER_TOKEN=<superadmin token> npx tsx examples/operations/sync-threads.ts <state file>
//
// AUDIT_URL defaults to http://127.0.0.1:4000/graphql.
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';

const stateFile = process.argv[2];
const token = (process.env.AUDIT_OWNER_TOKEN ?? '').replace(/^Bearer\s+/i, '');
if (!stateFile || !token) {
  console.error('usage: AUDIT_OWNER_TOKEN=<superadmin token> npx tsx examples/operations/sync-threads.ts <state file>');
  process.exit(2);
}
const url = process.env.AUDIT_URL ?? 'http://127.0.0.1:4000/graphql';
// Audits are readable by a superadmin on its own threads only: copy the threads the token's `sub` owns.
const owner = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString()).sub as string;

interface Place { cursor: string; messages: number; lastMessageId: string | null }
const state: { threads: Record<string, Place> } = existsSync(stateFile) ? JSON.parse(readFileSync(stateFile, 'utf8')) : { threads: {} };
const save = () => {
  writeFileSync(`${stateFile}.tmp`, JSON.stringify(state));
  renameSync(`${stateFile}.tmp`, stateFile); // whole or not at all, whenever the run stops
};
const emit = (line: Record<string, unknown>) => console.log(JSON.stringify(line));

class ApiError extends Error {
  constructor(readonly errors: { message: string; extensions?: { code?: string; limit?: string } }[]) {
    super(errors.map((error) => `${error.extensions?.code}: ${error.message}`).join('; '));
  }
  has = (code: string) => this.errors.some((error) => error.extensions?.code === code || error.extensions?.limit === code);
}

async function graphql<T>(query: string, variables: Record<string, unknown>): Promise<T> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
  });
  const { data, errors } = (await response.json()) as { data?: T; errors?: ApiError['errors'] };
  if (errors?.length) throw new ApiError(errors);
  return data!;
}

interface Listed { id: string; title: string | null; ownerId: string; createdAt: string; changeCursor: string; startCursor: string; messageCount: number }
const THREADS = `query($owner: String!, $after: String) {
  threads(ownerId: $owner, first: 100, after: $after) {
    edges { node { id title ownerId createdAt changeCursor startCursor messageCount } }
    pageInfo { hasNextPage endCursor }
  }
}`;
const MESSAGES = `query($id: ID!, $after: ID, $first: Int) { thread(id: $id) { messages(after: $after, first: $first) { id role content createdAt } } }`;
const CHANGES = `subscription($id: ID!, $after: String) {
  threadChanges(threadId: $id, after: $after) {
    cursor
    run { id status createdAt startedAt finishedAt error leaseEpoch resumedFrom { id } }
    audit {
      __typename id runId status operationId sequence finishedSequence startedAt finishedAt durationMs
      ... on ModelAudit { model input output error usage toolCalls { ...call } }
      ... on ToolAudit { name toolCallId effectiveInput output error awaitingRunTerminal toolCall { ...call } }
    }
  }
}
fragment call on ToolCall { id toolCallId name status declaredInput effectiveInput output error startedAt finishedAt durationMs }`;

/** Every thread the owner has now: one row each, whatever changed (the list is how deletions show). */
async function listThreads(): Promise<Map<string, Listed>> {
  const listed = new Map<string, Listed>();
  for (let after: string | null = null; ; ) {
    const { threads }: { threads: { edges: { node: Listed }[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } } } =
      await graphql(THREADS, { owner, after });
    for (const { node } of threads.edges) listed.set(node.id, node);
    if (!threads.pageInfo.hasNextPage) return listed;
    after = threads.pageInfo.endCursor;
  }
}

/** The messages after the last one copied; fewer at a time when a page's contents pass the answer's limit. */
async function copyMessages(thread: Listed, place: Place) {
  let first = 100;
  while (place.messages < thread.messageCount) {
    let page: { id: string; createdAt: string }[];
    try {
      page = (await graphql<{ thread: { messages: { id: string; createdAt: string }[] } }>(MESSAGES, { id: thread.id, after: place.lastMessageId, first })).thread.messages;
    } catch (error) {
      if (error instanceof ApiError && error.has('ANSWER_PAYLOAD_BYTES') && first > 1) {
        first = Math.ceil(first / 2);
        continue;
      }
      throw error;
    }
    if (page.length === 0) break;
    for (const message of page) emit({ op: 'upsert', kind: 'message', id: message.id, threadId: thread.id, final: true, row: message });
    place.messages += page.length;
    place.lastMessageId = page.at(-1)!.id;
  }
}

/** The thread's runs and audits changed after the place's cursor, up to the cursor the list read (a change of each, in its latest state). */
async function copyChanges(thread: Listed, place: Place) {
  const abort = new AbortController();
  const response = await fetch(url, {
    method: 'POST',
    signal: abort.signal,
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query: CHANGES, variables: { id: thread.id, after: place.cursor } }),
  });
  if (!response.ok || !response.body) throw new Error(`threadChanges answered HTTP ${response.status}: ${await response.text()}`);
  const decoder = new TextDecoder();
  let buffered = '';
  try {
    const reader = response.body.getReader();
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      buffered += decoder.decode(chunk.value, { stream: true });
      for (let end; (end = buffered.indexOf('\n\n')) >= 0; buffered = buffered.slice(end + 2)) {
        const block = buffered.slice(0, end);
        if (/^event: complete/m.test(block)) throw new Error(`the stream of thread ${thread.id} ended before ${thread.changeCursor}`);
        const data = block.split('\n').filter((line) => line.startsWith('data:')).map((line) => line.slice(5).trim()).join('');
        if (!/^event: next/m.test(block) || !data) continue;
        const { data: result, errors } = JSON.parse(data);
        if (errors?.length) throw new ApiError(errors);
        const { cursor, run, audit } = result.threadChanges;
        // A declared tool call changes after the model call that declared it has ended (when its
        // tool runs): a row of its own, updated from the tool audit's changes.
        const { toolCalls = [], toolCall, ...entity } = run ?? audit;
        const final = run ? !['QUEUED', 'RUNNING'].includes(run.status) : audit.status !== 'RUNNING';
        emit({ op: 'upsert', kind: run ? 'run' : 'audit', id: entity.id, threadId: thread.id, final, row: entity });
        for (const call of toolCall ? [toolCall] : toolCalls) {
          emit({ op: 'upsert', kind: 'toolCall', id: call.id, threadId: thread.id, final: !['PENDING', 'RUNNING'].includes(call.status), row: call });
        }
        place.cursor = cursor;
        // A thread's cursors compare as strings; a change folded into a later one may pass the list's.
        if (cursor >= thread.changeCursor) return;
      }
    }
    throw new Error(`the stream of thread ${thread.id} closed before ${thread.changeCursor}`);
  } finally {
    abort.abort();
  }
}

const listed = await listThreads();
for (const id of Object.keys(state.threads)) {
  if (listed.has(id)) continue;
  emit({ op: 'delete', kind: 'thread', id });
  delete state.threads[id];
  save();
}
/** What changed in the thread since `place`, or the whole thread from its start without one. */
async function copyThread(thread: Listed, place: Place | undefined): Promise<Place> {
  if (!place) {
    const { changeCursor: _c, startCursor: _s, messageCount: _m, ...row } = thread;
    emit({ op: 'upsert', kind: 'thread', id: thread.id, threadId: thread.id, final: true, row });
    place = { cursor: thread.startCursor, messages: 0, lastMessageId: null };
  }
  await copyMessages(thread, place);
  if (place.cursor !== thread.changeCursor) await copyChanges(thread, place);
  return place;
}

let copied = 0;
for (const thread of listed.values()) {
  const known = state.threads[thread.id];
  if (known && known.cursor === thread.changeCursor && known.messages === thread.messageCount) continue;
  let place = known ? { ...known } : undefined;
  try {
    place = await copyThread(thread, place).catch((error: unknown) => {
      if (!(known && error instanceof ApiError && error.has('BAD_USER_INPUT'))) throw error;
      // The kept cursor is from before a restore of the database: the copy may hold rows the
      // restore took back (docs/operations.md, "Backup and restore"). Copy the thread anew.
      emit({ op: 'delete', kind: 'thread', id: thread.id });
      return copyThread(thread, undefined);
    });
  } catch (error) {
    if (!(error instanceof ApiError && error.has('NOT_FOUND'))) throw error;
    // Deleted since the list was read: the next run finds it gone (and passes its deletion on).
  }
  state.threads[thread.id] = place ?? { cursor: thread.startCursor, messages: 0, lastMessageId: null };
  save();
  copied++;
}
console.error(`${copied} of ${listed.size} threads changed; ${Object.keys(state.threads).length} in ${stateFile}`);
