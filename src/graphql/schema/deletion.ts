import { requirePrincipal } from '../../domain/access.js';
import { deleteThread, type DeletionReceipt } from '../../domain/deletion.js';
import { log } from '../../log.js';
import { builder } from '../builder.js';

const DeletionReceiptRef = builder.objectRef<DeletionReceipt>('DeletionReceipt').implement({
  description: 'What a deletion removed, counted in its transaction, and checked gone after it committed.',
  fields: (t) => ({
    threadId: t.exposeID('threadId', { description: 'The deleted thread.' }),
    runs: t.exposeInt('runs', { description: 'How many runs it removed.' }),
    audits: t.exposeInt('audits', { description: 'How many model and tool audits it removed.' }),
    toolCalls: t.exposeInt('toolCalls', { description: 'How many ToolCalls it removed.' }),
    messages: t.exposeInt('messages', { description: 'How many ordinary messages it removed.' }),
    verifiedAt: t.expose('verifiedAt', { type: 'DateTime', description: "When a read after the commit found none of the thread's rows left." }),
  }),
});

builder.mutationField('deleteThread', (t) =>
  t.field({
    type: DeletionReceiptRef,
    description:
      'The thread owner, an admin or a superadmin. Deletes the thread and everything under it for good\n(docs/semantics.md, "Deletion and retention").',
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true, description: 'The thread to delete.' }) },
    async resolve(_root, { id }, { deps, principal, requestId }) {
      const deleter = requirePrincipal(principal);
      const receipt = await deleteThread(deps, deleter, id);
      // The server's own record of an erasure, as the sweeper's: a client that loses its answer loses no proof.
      const deletedBy = { sub: deleter.sub, role: deleter.role };
      log.info({ event: 'thread_deleted', reason: 'request', requestId, deletedBy, ...receipt }, 'thread deleted');
      return receipt;
    },
  }),
);
