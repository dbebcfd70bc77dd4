import type { AuditCounts, TokenTotals } from '../../domain/audit-summaries.js';
import { builder } from '../builder.js';
import type { Loaders } from '../loaders.js';
import { RunRef } from './run.js';
import { ThreadRef } from './thread.js';

/** A run's or a thread's audits summed up: the counts and where to find its tokens. */
interface AuditSummary {
  counts: AuditCounts;
  tokens: () => Promise<TokenTotals | null>;
}

const count = (field: keyof Omit<AuditCounts, 'key' | 'firstStartedAt' | 'lastFinishedAt' | 'lastChangedAt'>) => (summary: AuditSummary) =>
  summary.counts[field];

const AuditSummaryRef = builder.objectRef<AuditSummary>('AuditSummary').implement({
  description:
    'What all the audits of a run or a thread add up to, however many a timeline has loaded (docs/debug-ui.md,\n"Failures at a glance"). Each field is read for a whole page of runs or threads at once.',
  fields: (t) => ({
    audits: t.int({ description: 'Model calls and tool executions.', resolve: count('audits') }),
    modelCalls: t.int({ description: 'Model calls.', resolve: count('modelCalls') }),
    toolCalls: t.int({ description: 'Tool executions (a tool run again in a resumed run counts again).', resolve: count('toolCalls') }),
    modelsFailed: t.int({ description: 'Model calls that ended FAILED.', resolve: count('modelsFailed') }),
    toolsFailed: t.int({ description: 'Tool executions that ended FAILED.', resolve: count('toolsFailed') }),
    toolsAbandoned: t.int({ description: 'Tool executions that ended ABANDONED.', resolve: count('toolsAbandoned') }),
    toolsCancelled: t.int({ description: 'Tool executions that ended CANCELLED.', resolve: count('toolsCancelled') }),
    toolsInterrupted: t.int({ description: 'Tool executions that ended INTERRUPTED.', resolve: count('toolsInterrupted') }),
    running: t.int({ description: 'Audits still RUNNING.', resolve: count('running') }),
    firstStartedAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'The earliest start of an audit (the runtime\'s clock).',
      resolve: (summary) => summary.counts.firstStartedAt,
    }),
    lastFinishedAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'The latest end of an audit (the runtime\'s clock).',
      resolve: (summary) => summary.counts.lastFinishedAt,
    }),
    lastChangedAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'When an audit last changed (the server\'s commit time): the latest activity.',
      resolve: (summary) => summary.counts.lastChangedAt,
    }),
    inputTokens: t.field({
      type: 'BigInt',
      nullable: true,
      description:
        "The model calls' input tokens, from each usage as its runtime reported it (whole, non-negative counts; anything else is no count); null when no usage carries counts. A BigInt: busy threads pass Int's 2^31 - 1.",
      resolve: async (summary) => (await summary.tokens())?.input ?? null,
    }),
    outputTokens: t.field({
      type: 'BigInt',
      nullable: true,
      description: "The model calls' output tokens, counted as `inputTokens`; null when no usage carries counts.",
      resolve: async (summary) => (await summary.tokens())?.output ?? null,
    }),
  }),
});

const summaryOf = async (
  counts: Loaders['runAuditCounts'],
  tokens: Loaders['runTokens'],
  id: string,
): Promise<AuditSummary> => ({ counts: await counts.load(id), tokens: () => tokens.load(id) });

builder.objectFields(RunRef, (t) => ({
  auditSummary: t.field({
    type: AuditSummaryRef,
    description:
      "What this run's audits add up to: failures, counts, times, tokens. In a lifecycle mutation's result, read after the write committed: a later write (a later event of the batch) may show in it.",
    resolve: (run, _args, { loaders }) => summaryOf(loaders.runAuditCounts, loaders.runTokens, run.id),
  }),
}));

builder.objectFields(ThreadRef, (t) => ({
  auditSummary: t.field({
    type: AuditSummaryRef,
    description: "What the audits of all this thread's runs add up to.",
    resolve: (thread, _args, { loaders }) => summaryOf(loaders.threadAuditCounts, loaders.threadTokens, thread.id),
  }),
  runCount: t.int({
    description: 'How many runs the thread has.',
    resolve: async (thread, _args, { loaders }) => (await loaders.threadRunCounts.load(thread.id)).runs,
  }),
  failedRunCount: t.int({
    description: 'How many of its runs ended FAILED.',
    resolve: async (thread, _args, { loaders }) => (await loaders.threadRunCounts.load(thread.id)).failedRuns,
  }),
  lastActivityAt: t.field({
    type: 'DateTime',
    description: 'When the thread last changed: its latest run or audit change, else its creation.',
    resolve: async (thread, _args, { loaders }) => {
      const [runs, audits] = await Promise.all([loaders.threadRunCounts.load(thread.id), loaders.threadAuditCounts.load(thread.id)]);
      const times = [runs.lastChangedAt, audits.lastChangedAt].filter((time): time is Date => time != null).map((time) => new Date(time).getTime());
      return times.length ? new Date(Math.max(...times)) : thread.createdAt;
    },
  }),
}));
