import { requirePrincipal } from '../../domain/access.js';
import { LEDGER_CASES, LEDGER_STATUSES, MAX_LEDGER_PAGE, toolCallLedger, type LedgerEntry } from '../../domain/tool-call-ledger.js';
import { chargedPayload } from '../answer-payloads.js';
import { builder, listCost } from '../builder.js';
import { PageInfoRef } from './thread.js';

const ToolCallLedgerStatusEnum = builder.enumType('ToolCallLedgerStatus', {
  description: "A ledger entry's status: its latest execution's (the tool audit's) once it ran, else PENDING.",
  values: LEDGER_STATUSES,
});

const ToolCallLedgerCaseEnum = builder.enumType('ToolCallLedgerCase', {
  description: 'What a debugger hunts for in a tool call.',
  values: {
    NEVER_RUN: { description: 'Declared by a model call and never started; its run (and any resume of it) has ended.' },
    PENDING: { description: 'Declared by a model call and not started yet; its run (or a resume of it) is still going.' },
    AWAITING_VERDICT: { description: "A bare error was recorded; the run's end decides how it closes." },
    CLOSED_BY_RUN_END: { description: "Closed by the run's end (finishRun, cancelRun or a lease expiry), not by a terminal event of its own." },
    RUNNING: { description: 'Running now; `leaseExpiresAt` says when the lease of the run it runs in expires.' },
  } satisfies Record<(typeof LEDGER_CASES)[number], unknown>,
});

const ToolCallLedgerEntryRef = builder.objectRef<LedgerEntry>('ToolCallLedgerEntry').implement({
  description: 'One declared tool call with its latest execution, as the ledger shows it.',
  fields: (t) => ({
    id: t.exposeID('id', { description: "The ToolCall's id." }),
    threadId: t.exposeID('threadId'),
    threadTitle: t.exposeString('threadTitle', { nullable: true }),
    runId: t.exposeID('runId', { description: 'The run whose model call declared it.' }),
    declaredById: t.exposeID('declaredById', { description: 'The model audit that declared it: the row to open for a call that never ran.' }),
    executedInRunId: t.exposeID('executedInRunId', { nullable: true, description: 'The run its latest execution ran in (a resume, for a call run again).' }),
    auditId: t.exposeID('auditId', { nullable: true, description: 'The tool audit of its latest execution: the row to open in the timeline.' }),
    toolCallId: t.exposeString('toolCallId'),
    name: t.exposeString('name'),
    declaredInput: t.field({
      type: 'JSON',
      nullable: true,
      description: 'The arguments the model declared.',
      resolve: (entry, _args, { loaders }) =>
        chargedPayload(entry.declaredInputBytes, () => loaders.toolCallPayload.load({ id: entry.id, payload: 'declaredInput' })),
    }),
    effectiveInput: t.field({
      type: 'JSON',
      nullable: true,
      description: 'The input the tool ran with; null when it never ran.',
      resolve: (entry, _args, { loaders }) =>
        chargedPayload(entry.effectiveInputBytes, () => loaders.auditPayload.load({ id: entry.auditId!, payload: 'input' })),
    }),
    inputDiffers: t.exposeBoolean('inputDiffers', { nullable: true, description: 'The effective input differs from the declared arguments (JSON equality); null when it never ran.' }),
    status: t.field({ type: ToolCallLedgerStatusEnum, resolve: (entry) => entry.status }),
    startedAt: t.expose('startedAt', { type: 'DateTime', nullable: true }),
    finishedAt: t.expose('finishedAt', { type: 'DateTime', nullable: true }),
    durationMs: t.exposeInt('durationMs', { nullable: true }),
    cases: t.field({ type: [ToolCallLedgerCaseEnum], resolve: (entry) => entry.cases }),
    leaseExpiresAt: t.expose('leaseExpiresAt', { type: 'DateTime', nullable: true, description: 'While it runs: when the lease of the run it runs in expires.' }),
  }),
});

const ToolCallLedgerEdgeRef = builder.objectRef<LedgerEntry>('ToolCallLedgerEdge').implement({
  fields: (t) => ({
    cursor: t.exposeString('id'),
    node: t.field({ type: ToolCallLedgerEntryRef, resolve: (entry) => entry }),
  }),
});

const ToolCallLedgerConnectionRef = builder.objectRef<{ entries: LedgerEntry[]; hasMore: boolean }>('ToolCallLedgerConnection').implement({
  description: 'A page of the tool-call ledger, newest first (Relay connection).',
  fields: (t) => ({
    // The page's size is counted once, on `toolCallLedger(first)`.
    edges: t.field({ type: [ToolCallLedgerEdgeRef], complexity: { field: 1, multiplier: 1 }, resolve: (page) => page.entries }),
    pageInfo: t.field({
      type: PageInfoRef,
      resolve: ({ entries, hasMore }) => ({ hasNextPage: hasMore, endCursor: entries.at(-1)?.id ?? null }),
    }),
  }),
});

const SINCE =
  "Only calls whose declaration the server recorded at or after this time, to the millisecond: the database's clock when the model call that declared it finished, the time the entries are ordered by. Not `startedAt`, the worker's clock, which a resume of an interrupted call sets again. Pass the same `since` and `until` with `after` (docs/debug-ui.md, \"An incident window\").";
const UNTIL = 'Only calls whose declaration the server recorded before this time (not at it), read as `since`; later than `since`, else BAD_USER_INPUT.';

builder.queryField('toolCallLedger', (t) =>
  t.field({
    type: ToolCallLedgerConnectionRef,
    description: `Every tool call the model calls declared, run or not, newest first, within one thread or across the threads whose audits the caller may read (a superadmin's own threads; any other role is FORBIDDEN, another's thread NOT_FOUND). Filters combine; \`since\` and \`until\` keep the calls whose declaration the server recorded within that window (the database's clock, the entries' order; not \`startedAt\`); \`first\` is 1 to ${MAX_LEDGER_PAGE}; \`after\` is a previous page's \`endCursor\`.`,
    authScopes: { authenticated: true },
    args: {
      threadId: t.arg.id({ required: false }),
      name: t.arg.string({ required: false, description: 'Exactly this tool name.' }),
      status: t.arg({ type: ToolCallLedgerStatusEnum, required: false }),
      case: t.arg({ type: ToolCallLedgerCaseEnum, required: false }),
      first: t.arg.int({ defaultValue: 50 }),
      after: t.arg.string({ required: false }),
      since: t.arg({ type: 'DateTime', required: false, description: SINCE }),
      until: t.arg({ type: 'DateTime', required: false, description: UNTIL }),
    },
    complexity: ({ first }) => listCost(first, MAX_LEDGER_PAGE),
    resolve: (_root, args, { deps, principal }) =>
      toolCallLedger(deps.db, requirePrincipal(principal), { ...args, threadId: args.threadId == null ? null : String(args.threadId) }),
  }),
);
