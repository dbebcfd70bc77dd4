import { confirmedLive } from '../../domain/audit-reads.js';
import { requirePrincipal } from '../../domain/access.js';
import { LEDGER_CASES, LEDGER_STATUSES, MAX_LEDGER_PAGE, toolCallLedger, type LedgerEntry } from '../../domain/tool-call-ledger.js';
import { chargedPayload } from '../answer-payloads.js';
import { builder, listCost } from '../builder.js';
import { MAX_LEDGER_READS_PER_PRINCIPAL, MAX_LEDGER_READS_PER_REQUEST, withReadSlot } from '../search-limits.js';
import { PageInfoRef } from './thread.js';

const ToolCallLedgerStatusEnum = builder.enumType('ToolCallLedgerStatus', {
  description: "A ledger entry's status: its latest execution's (the tool audit's) once it ran, else PENDING.",
  values: {
    PENDING: { description: 'Declared and never started.' },
    RUNNING: { description: "Its latest execution is RUNNING (a bare error awaiting the run's verdict included)." },
    COMPLETED: { description: 'Its latest execution ended COMPLETED.' },
    FAILED: { description: 'Its latest execution ended FAILED.' },
    CANCELLED: { description: 'Its latest execution ended CANCELLED.' },
    INTERRUPTED: { description: 'Its latest execution ended INTERRUPTED; a resume may start it again.' },
    ABANDONED: { description: 'Its latest execution ended ABANDONED.' },
  } satisfies Record<(typeof LEDGER_STATUSES)[number], unknown>,
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
    threadId: t.exposeID('threadId', { description: 'The thread it belongs to.' }),
    threadTitle: t.exposeString('threadTitle', { nullable: true, description: "That thread's title; null when it has none." }),
    runId: t.exposeID('runId', { description: 'The run whose model call declared it.' }),
    declaredById: t.exposeID('declaredById', { description: 'The model audit that declared it: the row to open for a call that never ran.' }),
    executedInRunId: t.exposeID('executedInRunId', { nullable: true, description: 'The run its latest execution ran in (a resume, for a call run again).' }),
    auditId: t.exposeID('auditId', { nullable: true, description: 'The tool audit of its latest execution: the row to open in the timeline.' }),
    toolCallId: t.exposeString('toolCallId', { description: 'The id the model gave the call.' }),
    name: t.exposeString('name', { description: "The tool's name as the model declared it." }),
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
    status: t.field({
      type: ToolCallLedgerStatusEnum,
      description: "Its latest execution's status once it ran, else PENDING.",
      resolve: (entry) => entry.status,
    }),
    startedAt: t.expose('startedAt', {
      type: 'DateTime',
      nullable: true,
      description: "When its latest execution started (the tool audit's startedAt); null when it never ran.",
    }),
    finishedAt: t.expose('finishedAt', {
      type: 'DateTime',
      nullable: true,
      description: "When its latest execution ended (the tool audit's finishedAt); null when it never ran, and while it runs with no error recorded.",
    }),
    durationMs: t.exposeInt('durationMs', {
      nullable: true,
      description: "Its latest execution's durationMs (one monotonic clock); null when not measured or it never ran.",
    }),
    cases: t.field({
      type: [ToolCallLedgerCaseEnum],
      description: 'The cases it is in (what `case` filters on); a call that ran and ended by an event of its own is in none.',
      resolve: (entry) => entry.cases,
    }),
    leaseExpiresAt: t.expose('leaseExpiresAt', { type: 'DateTime', nullable: true, description: 'While it runs: when the lease of the run it runs in expires.' }),
  }),
});

const ToolCallLedgerEdgeRef = builder.objectRef<LedgerEntry>('ToolCallLedgerEdge').implement({
  description: 'A ledger entry with its position.',
  fields: (t) => ({
    cursor: t.exposeString('id', { description: "The entry's position (its ToolCall's id): pass it as `after` to read the entries after it." }),
    node: t.field({ type: ToolCallLedgerEntryRef, description: 'The entry.', resolve: (entry) => entry }),
  }),
});

const ToolCallLedgerConnectionRef = builder.objectRef<{ entries: LedgerEntry[]; hasMore: boolean }>('ToolCallLedgerConnection').implement({
  description: 'A page of the tool-call ledger, newest first (Relay connection).',
  fields: (t) => ({
    // The page's size is counted once, on `toolCallLedger(first)`.
    edges: t.field({
      type: [ToolCallLedgerEdgeRef],
      description: "The page's entries, newest first.",
      complexity: { field: 1, multiplier: 1 },
      resolve: (page) => page.entries,
    }),
    pageInfo: t.field({
      type: PageInfoRef,
      description: 'Whether more entries follow, and the cursor to read them.',
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
    description: `Every tool call the model calls declared, run or not, newest first, within one thread or across the threads whose audits the caller may read (a superadmin's own threads; any other role is FORBIDDEN, another's thread NOT_FOUND). Filters combine; \`since\` and \`until\` keep the calls whose declaration the server recorded within that window (the database's clock, the entries' order; not \`startedAt\`); \`first\` is 1 to ${MAX_LEDGER_PAGE}; \`after\` is a previous page's \`endCursor\`. At most ${MAX_LEDGER_READS_PER_REQUEST} ledger reads per request and ${MAX_LEDGER_READS_PER_PRINCIPAL} running at once per principal.`,
    authScopes: { authenticated: true },
    args: {
      threadId: t.arg.id({ required: false, description: "Only this thread's calls (one of the caller's threads, else NOT_FOUND)." }),
      name: t.arg.string({ required: false, description: 'Exactly this tool name.' }),
      status: t.arg({ type: ToolCallLedgerStatusEnum, required: false, description: 'Only entries with this status.' }),
      case: t.arg({ type: ToolCallLedgerCaseEnum, required: false, description: 'Only entries in this case.' }),
      first: t.arg.int({ defaultValue: 50, description: `How many entries at most (1 to ${MAX_LEDGER_PAGE}).` }),
      after: t.arg.string({ required: false, description: "A previous page's `endCursor`: read the entries after it." }),
      since: t.arg({ type: 'DateTime', required: false, description: SINCE }),
      until: t.arg({ type: 'DateTime', required: false, description: UNTIL }),
    },
    complexity: ({ first }) => listCost(first, MAX_LEDGER_PAGE),
    resolve: async (_root, args, { deps, principal }) => {
      const caller = requirePrincipal(principal);
      const threadId = args.threadId == null ? null : String(args.threadId);
      const page = await withReadSlot('ledger', caller.sub, () => toolCallLedger(deps.db, caller, { ...args, threadId }));
      return threadId === null ? page : confirmedLive(deps.db, threadId, page);
    },
  }),
);
