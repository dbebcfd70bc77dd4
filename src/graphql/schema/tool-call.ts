import { loadReadableThread, requirePrincipal } from '../../domain/access.js';
import { toolCallStats } from '../../domain/tool-call-stats.js';
import { builder } from '../builder.js';
import { ToolCallStatusEnum } from './enums.js';

export const ToolCallRef = builder.prismaObject('ToolCall', {
  description:
    "The compatibility read model of one declared tool call. Before the tool starts it holds the\nmodel's declared intent (PENDING); after it starts it mirrors the tool audit one way.",
  fields: (t) => ({
    id: t.exposeID('id'),
    toolCallId: t.exposeString('toolCallId'),
    name: t.exposeString('name'),
    declaredInput: t.expose('declaredInput', { type: 'JSON', nullable: true }),
    effectiveInput: t.expose('effectiveInput', { type: 'JSON', nullable: true }),
    status: t.expose('status', { type: ToolCallStatusEnum }),
    output: t.expose('output', {
      type: 'JSON',
      nullable: true,
      description: 'Only the content of the tool output, never the rest of its envelope.',
    }),
    error: t.expose('error', { type: 'JSON', nullable: true }),
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
