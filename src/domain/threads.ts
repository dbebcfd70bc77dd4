import { randomUUID } from 'node:crypto';
import type { Principal } from '../auth/principal.js';
import { insertRow } from '../db/sql.js';
import type { Message, MessageRole, Thread } from '../generated/prisma/client.js';
import { loadReadableThreadForWrite } from './access.js';
import { command } from './command.js';
import { assertStorableJson } from './json.js';

export const createThread = command(async ({ sql }, principal: Principal, input: { title?: string | null }) =>
  insertRow<Thread>(sql, 'thread', { id: randomUUID(), ownerId: principal.sub, title: input.title ?? null }),
);

/** Ordinary history only: audit rows are written by the run lifecycle, never through here. */
export const appendMessage = command(
  async ({ sql, deps }, principal: Principal, input: { threadId: string; role: MessageRole; content?: unknown }) => {
    const thread = await loadReadableThreadForWrite(sql, principal, input.threadId);
    assertStorableJson(input.content, deps.limits.maxJsonBytes, 'content');
    return insertRow<Message>(sql, 'message', {
      id: randomUUID(),
      threadId: thread.id,
      role: input.role,
      messageType: 'chat',
      content: input.content ?? undefined,
    });
  },
);
