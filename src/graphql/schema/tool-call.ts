import { loadReadableThread, requirePrincipal } from '../../domain/access.js';
import { toolCallStats } from '../../domain/tool-call-stats.js';
import { confirmedLive, type ToolCallPayload, type ToolCallRow } from '../../domain/audit-reads.js';
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
    id: t.exposeID('id', { description: "The ToolCall's id." }),
    toolCallId: t.exposeString('toolCallId', { description: 'The id the model gave the call.' }),
    name: t.exposeString('name', { description: "The tool's name as the model declared it." }),
    declaredInput: t.field({
      type: 'JSON',
      nullable: true,
      description: 'The arguments the model declared; null when it declared none.',
      resolve: (call, _args, context) => payloadOf(call, 'declaredInput', context),
    }),
    effectiveInput: t.field({
      type: 'JSON',
      nullable: true,
      description: 'The input its latest execution ran with (the tool audit\'s); null while PENDING.',
      resolve: (call, _args, context) => payloadOf(call, 'effectiveInput', context),
    }),
    status: t.expose('status', { type: ToolCallStatusEnum, description: "PENDING as declared, then its latest execution's, mirrored from the tool audit." }),
    output: t.field({
      type: 'JSON',
      nullable: true,
      description: 'Only the content of the tool output, never the rest of its envelope.',
      resolve: (call, _args, context) => payloadOf(call, 'output', context),
    }),
    error: t.field({
      type: 'JSON',
      nullable: true,
      description: "Its latest execution's error (the tool audit's); null when there is none, and while PENDING.",
      resolve: (call, _args, context) => payloadOf(call, 'error', context),
    }),
    startedAt: t.expose('startedAt', {
      type: 'DateTime',
      nullable: true,
      description:
        "When its latest execution started (the tool audit's startedAt); null while PENDING: an interrupted execution clears it, a resume's start sets it anew.",
    }),
    finishedAt: t.expose('finishedAt', {
      type: 'DateTime',
      nullable: true,
      description: "When its latest execution ended (the tool audit's finishedAt); null while PENDING, and while RUNNING with no error recorded.",
    }),
    durationMs: t.exposeInt('durationMs', {
      nullable: true,
      description: "Its latest execution's durationMs (one monotonic clock); null when not measured, and while PENDING.",
    }),
  }),
});

const ToolCallStatRef = builder
  .objectRef<{ name: string; status: string; count: number }>('ToolCallStat')
  .implement({
    description: "How many of a thread's ToolCalls of one tool name are in one status.",
    fields: (t) => ({
      name: t.exposeString('name', { description: "The tool's name." }),
      status: t.field({ type: ToolCallStatusEnum, description: 'The status counted.', resolve: (stat) => stat.status as never }),
      count: t.exposeInt('count', { description: 'How many (never 0: a pair with none is left out).' }),
    }),
  });

builder.queryField('toolCallStats', (t) =>
  t.field({
    type: [ToolCallStatRef],
    description: 'Counts from the ToolCall compatibility projection, for dashboards. The thread owner, an admin or a superadmin.',
    authScopes: { authenticated: true },
    args: { threadId: t.arg.id({ required: true, description: 'The thread whose ToolCalls to count.' }) },
    resolve: async (_root, { threadId }, { deps, principal }) => {
      const thread = await loadReadableThread(deps.db, requirePrincipal(principal), threadId);
      return confirmedLive(deps.db, thread.id, await toolCallStats(deps.db, thread.id));
    },
  }),
);
