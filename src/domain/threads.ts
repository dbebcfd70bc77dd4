import type { Principal } from '../auth/principal.js';
import type { MessageRole } from '../generated/prisma/client.js';
import { loadReadableThread } from './access.js';
import { command } from './command.js';
import { assertStorableJson } from './json.js';

export const createThread = command(async ({ tx }, principal: Principal, input: { title?: string | null }) =>
  tx.thread.create({ data: { ownerId: principal.sub, title: input.title ?? null } }),
);

/** Ordinary history only: audit rows are written by the run lifecycle, never through here. */
export const appendMessage = command(
  async ({ tx, deps }, principal: Principal, input: { threadId: string; role: MessageRole; content?: unknown }) => {
    const thread = await loadReadableThread(tx, principal, input.threadId);
    assertStorableJson(input.content, deps.limits.maxJsonBytes, 'content');
    return tx.message.create({
      data: { threadId: thread.id, role: input.role, messageType: 'chat', content: input.content as object },
    });
  },
);
