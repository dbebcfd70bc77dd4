import { requirePrincipal } from '../../domain/access.js';
import { MAX_AUDITS, PAYLOAD_BYTES, readAudit, readTimeline, type AuditRow, type Payload } from '../../domain/audit-reads.js';
import { encodeCursor } from '../../domain/change-cursors.js';
import { readRunTimeline } from '../../domain/run-timeline.js';
import { builder, listCost } from '../builder.js';
import type { GraphQLContext } from '../context.js';
import { payloadField } from '../answer-payloads.js';
import { AuditStatusEnum, MessageRoleEnum } from './enums.js';

/** A payload of an audit, its size read with the row, loaded with the request's other audits' payloads. */
const payloadOf = (row: AuditRow, payload: Payload, { loaders }: GraphQLContext) =>
  payloadField(row[payload], () => row[PAYLOAD_BYTES[payload]], () => loaders.auditPayload.load({ id: row.id, payload }));

// Shaped by AuditRow, not the whole Message model: reads return only the columns these show.
export const AuditRef = builder.interfaceRef<AuditRow>('Audit').implement({
  description: "One entry of a run's audit timeline: a model call or a tool execution.",
  resolveType: (row) => (row.role === 'TOOL' ? 'ToolAudit' : 'ModelAudit'),
  fields: (t) => ({
    id: t.exposeID('id', { description: "The audit's id: what `audit(id)` loads." }),
    runId: t.id({
      description: 'The run it was recorded in (a tool run again in a resumed run is a new audit there).',
      resolve: (row) => row.runId!,
    }),
    role: t.expose('role', { type: MessageRoleEnum, description: 'ASSISTANT for a model audit, TOOL for a tool audit.' }),
    operationId: t.string({
      description: 'Model call id for model audits; the tool_call_id for tool audits.',
      resolve: (row) => row.operationId!,
    }),
    sequence: t.field({
      type: 'BigInt',
      description: "The runtime's root stream sequence number of the start event.",
      resolve: (row) => row.sequence!,
    }),
    finishedSequence: t.expose('finishedSequence', {
      type: 'BigInt',
      nullable: true,
      description: 'The sequence number of the terminal (or error) event, once there is one.',
    }),
    status: t.field({
      type: AuditStatusEnum,
      description: "RUNNING until its own terminal event or its run's end closes it.",
      resolve: (row) => row.status!,
    }),
    startedAt: t.expose('startedAt', {
      type: 'DateTime',
      nullable: true,
      description:
        "When the runtime saw the start: its start event's `observedAt` (the runtime's wall clock); a replayed start keeps the first. A resume never resets it: a tool run again in a resumed run is a new audit, with its own.",
    }),
    finishedAt: t.expose('finishedAt', {
      type: 'DateTime',
      nullable: true,
      description:
        "When it ended: the `observedAt` of its finish or bare error (the runtime's clock), else the database's time of the run's end that closed it (never before startedAt). Null while RUNNING with no error recorded.",
    }),
    durationMs: t.exposeInt('durationMs', {
      nullable: true,
      description: 'Backend duration on one monotonic clock; null when start and end were not read on the same clock.',
    }),
    inputBytes: t.exposeInt('inputBytes', {
      nullable: true,
      description:
        "Size in bytes of the input (a tool's effective input) as stored: its JSON text with a space after each `,` and `:` and numbers in full (at most 1.5 × MAX_JSON_BYTES; docs/semantics.md, \"Sizes of JSON values\"); null when there is none. Read without the payload: a row can show which payload is large before `audit(id)` loads it.",
    }),
    outputBytes: t.exposeInt('outputBytes', { nullable: true, description: 'Size in bytes of the output as stored (as inputBytes); null when there is none.' }),
    errorBytes: t.exposeInt('errorBytes', { nullable: true, description: 'Size in bytes of the error as stored (as inputBytes); null when there is none.' }),
  }),
});

export const ModelAuditRef = builder.objectRef<AuditRow>('ModelAudit').implement({
  description: 'A model call of a run: recordModelStarted opens it RUNNING, recordModelFinished closes it and declares its tool calls.',
  interfaces: [AuditRef],
  fields: (t) => ({
    model: t.exposeString('name', { nullable: true, description: "The model's name as recordModelStarted sent it; null when it sent none." }),
    input: t.field({
      type: 'JSON',
      nullable: true,
      description: 'What was sent to the model (e.g. its messages), as recordModelStarted carried it; null when none.',
      resolve: (row, _args, context) => payloadOf(row, 'input', context),
    }),
    output: t.field({
      type: 'JSON',
      nullable: true,
      description: "The model's response as recordModelFinished carried it; null when none, or not finished yet.",
      resolve: (row, _args, context) => payloadOf(row, 'output', context),
    }),
    error: t.field({
      type: 'JSON',
      nullable: true,
      description:
        'Why it failed: the error recordModelFinished carried, else, when the run\'s end closed it, the closing reason {code, message} (e.g. code RUN_FAILED, LEASE_EXPIRED); null otherwise.',
      resolve: (row, _args, context) => payloadOf(row, 'error', context),
    }),
    usage: t.field({
      type: 'JSON',
      nullable: true,
      description:
        "The token usage as the runtime reported it in recordModelFinished, in the runtime's own shape (auditSummary reads its token counts); null when none.",
      resolve: (row, _args, context) => payloadOf(row, 'usage', context),
    }),
  }),
});

export const ToolAuditRef = builder.objectRef<AuditRow>('ToolAudit').implement({
  description:
    "One execution of a declared tool call in a run: recordToolStarted opens it RUNNING; its finish, or the run's end, closes it.",
  interfaces: [AuditRef],
  fields: (t) => ({
    toolCallId: t.string({ description: 'The id the model gave the tool call (the same as operationId).', resolve: (row) => row.operationId! }),
    name: t.string({ description: "The tool's name as recordToolStarted sent it.", resolve: (row) => row.name! }),
    effectiveInput: t.field({
      type: 'JSON',
      nullable: true,
      description: 'What the tool actually ran with, a JSON object as recordToolStarted carried it (none sent is {}).',
      resolve: (row, _args, context) => payloadOf(row, 'input', context),
    }),
    output: t.field({
      type: 'JSON',
      nullable: true,
      description: 'The raw tool output envelope as the runtime reported it.',
      resolve: (row, _args, context) => payloadOf(row, 'output', context),
    }),
    error: t.field({
      type: 'JSON',
      nullable: true,
      description:
        "Why it failed: {message: <the output's content>} for an output with `status: \"error\"`, the bare error recordToolError carried, else, when the run's end closed it, the closing reason {code, message}; null otherwise.",
      resolve: (row, _args, context) => payloadOf(row, 'error', context),
    }),
    awaitingRunTerminal: t.exposeBoolean('awaitingRunTerminal', {
      description: "True while a bare tool error waits for the run's terminal verdict.",
    }),
  }),
});

const ThreadAuditsRef = builder
  .objectRef<{ threadId: string; items: AuditRow[]; truncated: boolean; cursor: string }>('ThreadAudits')
  .implement({
    description: "A page of a thread's audit timeline (threadAudits), with the change cursor that continues it live.",
    fields: (t) => ({
      threadId: t.exposeID('threadId', { description: 'The thread read.' }),
      items: t.field({
        type: [AuditRef],
        description: 'At most `limit` entries: the newest ones, returned oldest first (run creation, then sequence).',
        // Counted by `threadAudits(limit)`, which multiplies this whole object.
        complexity: { field: 1, multiplier: 1 },
        resolve: (parent) => parent.items,
      }),
      truncated: t.exposeBoolean('truncated', {
        description: 'True when the thread has more audit entries than were returned.',
      }),
      cursor: t.exposeString('cursor', {
        description:
          'The cursor of the thread\'s latest change included in this read: `items` and `cursor` are\none consistent snapshot. Subscribe to threadChanges with `after: cursor` to continue it\nwith no gap and no duplicate.',
      }),
    }),
  });

builder.queryField('threadAudits', (t) =>
  t.field({
    type: ThreadAuditsRef,
    description: 'Super administrators only, and only on threads they own. `limit` is 1 to 500.',
    authScopes: { authenticated: true },
    args: {
      threadId: t.arg.id({ required: true, description: 'The thread whose timeline to read.' }),
      limit: t.arg.int({ defaultValue: MAX_AUDITS, description: `How many audits at most (1 to ${MAX_AUDITS}): the newest ones.` }),
      before: t.arg.id({
        required: false,
        description:
          'Page back: the id of an audit of this thread (the first item of the previous page); the read then returns the\nnewest `limit` audits older than it. Anything else is BAD_USER_INPUT.',
      }),      runId: t.arg.id({
        required: false,
        description:
          'Only this run\'s audits (a run of this thread, else BAD_USER_INPUT): the newest `limit` of them, paged back with\n`before` (an audit of this run); `truncated` then says whether the run holds older ones.',
      }),
    },
    complexity: ({ limit }) => listCost(limit, MAX_AUDITS),
    resolve: async (_root, { threadId, limit, before, runId }, { deps, principal, loaders }) => {
      const anchor = before == null ? null : String(before);
      const timeline = runId == null
        ? await readTimeline(deps.db, requirePrincipal(principal), threadId, limit, anchor)
        : await readRunTimeline(deps.db, requirePrincipal(principal), threadId, String(runId), limit, anchor);
      // The items are what a tool audit's `declaredBy` most often points to.
      for (const audit of timeline.items) loaders.audit.prime(audit.id, audit);
      return { ...timeline, cursor: encodeCursor(deps.databaseId, timeline.threadId, timeline.cursor) };
    },
  }),
);

builder.queryField('audit', (t) =>
  t.field({
    type: AuditRef,
    description:
      'One audit by id, with its inputs, outputs and errors (what a debug UI loads when a row is opened). Super\nadministrators only, and only on threads they own; anything else is NOT_FOUND.',
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true, description: "The audit's id (Audit.id)." }) },
    resolve: async (_root, { id }, { deps, principal, loaders }) => {
      const audit = await readAudit(deps.db, requirePrincipal(principal), String(id));
      loaders.audit.prime(audit.id, audit);
      return audit;
    },
  }),
);
