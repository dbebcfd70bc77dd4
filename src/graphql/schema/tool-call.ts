import { loadReadableThread, requirePrincipal } from '../../domain/access.js';
import { toolCallStats } from '../../domain/tool-call-stats.js';
import type { ToolCallPayload, ToolCallRow } from '../../domain/audit-reads.js';
import { builder } from '../builder.js';
import type { GraphQLContext } from '../context.js';
import { payloadField } from '../answer-payloads.js';
import { ToolCallStatusEnum } from './enums.js';

/** A payload of a tool call, its size and then itself read with the request's other calls'. */
function payloadOf(toolCall: ToolCallRow, payload: ToolCallPayload, { loaders }: GraphQLContext) {
  const key = { id: toolCall.id, payload };
  return payloadField(toolCall[payload], () => loaders.toolCallPayloadBytes.load(key) as Promise<number | null>, () => loaders.toolCallPayload.load(key));
}

export const ToolCallRef = builder.objectRef<ToolCallRow>('ToolCall').implement({
  description:
    "The compatibility read model of one declared tool call. Before the tool starts it holds the\nmodel's declared intent (PENDING); after it starts it mirrors the tool audit one way.",
  fields: (t) => ({
    id: t.exposeID('id'),
    toolCallId: t.exposeString('toolCallId'),
    name: t.exposeString('name'),
    declaredInput: t.field({ type: 'JSON', nullable: true, resolve: (call, _args, context) => payloadOf(call, 'declaredInput', context) }),
    effectiveInput: t.field({ type: 'JSON', nullable: true, resolve: (call, _args, context) => payloadOf(call, 'effectiveInput', context) }),
    status: t.expose('status', { type: ToolCallStatusEnum }),
    output: t.field({
      type: 'JSON',
      nullable: true,
      description: 'Only the content of the tool output, never the rest of its envelope.',
      resolve: (call, _args, context) => payloadOf(call, 'output', context),
    }),
    error: t.field({ type: 'JSON', nullable: true, resolve: (call, _args, context) => payloadOf(call, 'error', context) }),
    startedAt: t.expose('startedAt', { type: 'DateTime', nullable: true }),
    finishedAt: t.expose('finishedAt', { type: 'DateTime', nullable: true }),
    durationMs: t.exposeInt('durationMs', { nullable: true }),
  }),
});

const ToolCallStatRef = builder
  .objectRef<{ name: string; status: string; count: number }>('ToolCallStat')
  .implement({
    fields: (t) => ({
      name: t.exposeString('name'),
      status: t.field({ type: ToolCallStatusEnum, resolve: (stat) => stat.status as never }),
      count: t.exposeInt('count'),
    }),
  });

builder.queryField('toolCallStats', (t) =>
  t.field({
    type: [ToolCallStatRef],
    description: 'Counts from the ToolCall compatibility projection, for dashboards.',
    authScopes: { authenticated: true },
    args: { threadId: t.arg.id({ required: true }) },
    resolve: async (_root, { threadId }, { deps, principal }) => {
      const thread = await loadReadableThread(deps.db, requirePrincipal(principal), threadId);
      return toolCallStats(deps.db, thread.id);
    },
  }),
);
