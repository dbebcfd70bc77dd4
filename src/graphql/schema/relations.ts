import type { AuditRow, ToolCallRow } from '../../domain/audit-reads.js';
import type { Run } from '../../generated/prisma/client.js';
import { MAX_DECLARED_TOOL_CALLS } from '../../domain/model-audits.js';
import { builder, listCost } from '../builder.js';
import { loadRequired } from '../loaders.js';
import { mayReachRun, mayReadDeclaringAudit } from './audit-access.js';
import { AuditRef, ModelAuditRef, ToolAuditRef } from './audit.js';
import { RunRef } from './run.js';
import { ThreadRef } from './thread.js';
import { ToolCallRef } from './tool-call.js';

// How the timeline's objects link to each other. Every link is read through the request's
// loaders (loaders.ts): one plain-SQL statement per link and nesting level, however many items.

// Inside a worker's lifecycle result every link to a run checks it is the worker's leased run
// (SEMANTICS.md "Principals"); elsewhere the read was authorised where it started.

builder.interfaceField(AuditRef, 'run', (t) =>
  t.field({
    type: RunRef,
    description: "The run it was recorded in. In a lifecycle mutation's result, as that write left it.",
    authScopes: (audit, _args, context, info) => mayReachRun(audit.runId, context, info),
    // A lifecycle mutation's own result holds it as the write left it: read after the commit, a
    // later write (a later event of the batch, a cancelRun) could show in it.
    resolve: (audit: AuditRow & { run?: Run }, _args, { loaders }) => audit.run ?? loadRequired(loaders.run, audit.runId),
  }),
);

builder.objectField(ModelAuditRef, 'toolCalls', (t) =>
  t.field({
    type: [ToolCallRef],
    description:
      "The tool calls this model call declared, in declaration order. In a lifecycle mutation's result (recordModelFinished, recordEvents), as that write left them.",
    complexity: listCost(MAX_DECLARED_TOOL_CALLS, MAX_DECLARED_TOOL_CALLS),
    authScopes: (audit, _args, context, info) => mayReachRun(audit.runId, context, info),
    // A lifecycle mutation's own result already holds them.
    resolve: (audit: AuditRow & { declaredToolCalls?: ToolCallRow[] }, _args, { loaders }) =>
      audit.declaredToolCalls ?? loaders.toolCallsDeclaredBy.load(audit.id),
  }),
);

builder.objectFields(ToolAuditRef, (t) => ({
  toolCall: t.field({
    type: ToolCallRef,
    description:
      "The ToolCall it executes: the declared call, shared by its executions in resumed runs. In a lifecycle mutation's result (a tool event's, recordEvents'), as that write left it.",
    // A lifecycle mutation's own result holds it as the write left it: read after the commit, a
    // later write (a cancelRun) could show in it.
    resolve: (audit: AuditRow & { toolCall?: ToolCallRow }, _args, { loaders }) => audit.toolCall ?? loadRequired(loaders.toolCall, audit.toolCallRowId),
  }),
  declaredBy: t.field({
    type: ModelAuditRef,
    description: 'The model call that declared its tool call, in this run or a run it resumes.',
    authScopes: (audit, _args, context, info) => mayReachRun(audit.runId, context, info),
    resolve: async (audit, _args, { loaders }) => {
      const toolCall = await loadRequired(loaders.toolCall, audit.toolCallRowId);
      return loadRequired(loaders.audit, toolCall.declaredById);
    },
  }),
}));

builder.objectField(ToolCallRef, 'declaredBy', (t) =>
  t.field({
    type: ModelAuditRef,
    description: 'Audit data: super administrators on their own threads only.',
    authScopes: (toolCall, _args, context, info) => mayReadDeclaringAudit(toolCall, context, info),
    resolve: (toolCall, _args, { loaders }) => loadRequired(loaders.audit, toolCall.declaredById),
  }),
);

builder.objectFields(RunRef, (t) => ({
  thread: t.field({
    type: ThreadRef,
    description: "The thread it runs in (FORBIDDEN inside a worker's lifecycle result).",
    authScopes: (_run, _args, context, info) => mayReachRun(null, context, info),
    resolve: (run, _args, { loaders }) => loadRequired(loaders.thread, run.threadId),
  }),
  resumedFrom: t.field({
    type: RunRef,
    nullable: true,
    description: 'The run this run resumes, if any (always in the same thread).',
    authScopes: (run, _args, context, info) => run.resumedFromId === null || mayReachRun(run.resumedFromId, context, info),
    resolve: (run, _args, { loaders }) => (run.resumedFromId === null ? null : loadRequired(loaders.run, run.resumedFromId)),
  }),
  toolCalls: t.field({
    type: [ToolCallRef],
    description:
      "The ToolCall projection of the calls declared by this run's model audits, in declaration order. In a finishRun's result (the mutation's, recordEvents'), as the finish left them; under an audit's run in a lifecycle result, read after the write committed (a later write may show).",
    // Counted as one model response's worth: most runs declare far fewer, a few declare more.
    complexity: listCost(MAX_DECLARED_TOOL_CALLS, MAX_DECLARED_TOOL_CALLS),
    // A finish's own result holds them: read after the commit, a resumed run's start could show in them.
    resolve: (run: Run & { toolCalls?: ToolCallRow[] }, _args, { loaders }) => run.toolCalls ?? loaders.toolCallsOfRun.load(run.id),
  }),
}));
