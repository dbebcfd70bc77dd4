import { requirePrincipal, requireAuditReader } from '../../domain/access.js';
import {
  DEFAULT_WINDOW_SECONDS,
  MAX_ACTIVITY_LIST,
  MAX_ACTIVITY_TOOLS,
  MAX_WINDOW_SECONDS,
  MIN_WINDOW_SECONDS,
  WIDE_WINDOW_SECONDS,
  activityListSize,
  activityToolsSize,
  callsOf,
  failureRateOf,
  orderedTools,
  readToolActivity,
  toolActivityArgs,
  type ToolActivity,
  type ToolActivityBucket,
  type ToolActivityStat,
} from '../../domain/tool-activity.js';
import type { ActivityDelivery } from '../../realtime/activity-feeds.js';
import { StreamInterrupted } from '../../realtime/pubsub.js';
import { createGraphQLError } from 'graphql-yoga';
import { builder, listCost } from '../builder.js';
import { MAX_WIDE_VIEWS_PER_PRINCIPAL, withReadSlot } from '../search-limits.js';
import { createLoaders, loadersForEvent, type Loaders } from '../loaders.js';
import { argumentsOfSelected } from '../selections.js';
import { ToolAuditRef } from './audit.js';

const ToolActivityStatRef = builder.objectRef<ToolActivityStat>('ToolActivityStat').implement({
  description: "One tool's activity in the view: running now, and ended within the window.",
  fields: (t) => ({
    name: t.exposeString('name', { description: "The tool's name." }),
    running: t.exposeInt('running', { description: 'Audits of this tool RUNNING at `at`.' }),
    completed: t.exposeInt('completed', { description: 'Audits of this tool that ended within the window, by how they ended.' }),
    failed: t.exposeInt('failed', { description: 'Ended within the window as FAILED.' }),
    otherEnded: t.exposeInt('otherEnded', { description: 'Ended within the window as CANCELLED, INTERRUPTED or ABANDONED.' }),
    p50DurationMs: t.exposeFloat('p50DurationMs', {
      nullable: true,
      description: 'Percentiles of `durationMs` of the audits that ended within the window; null when none had one.',
    }),
    p95DurationMs: t.exposeFloat('p95DurationMs', { nullable: true, description: 'The 95th percentile, as p50DurationMs.' }),
    maxDurationMs: t.exposeFloat('maxDurationMs', {
      nullable: true,
      description: 'The longest `durationMs` of the audits that ended within the window, exact; null when none had one.',
    }),
    calls: t.int({
      description: '`running` plus the audits that ended within the window (`completed`, `failed`, `otherEnded`): what `orderBy: CALLS` orders by.',
      resolve: callsOf,
    }),
    failureRate: t.float({
      nullable: true,
      description:
        '`failed` over the audits that ended within the window (`completed` + `failed` + `otherEnded`), 0 to 1; null when none ended. What `orderBy: FAILURE_RATE` orders by.',
      resolve: failureRateOf,
    }),
  }),
});

const ToolActivityBucketRef = builder.objectRef<ToolActivityBucket>('ToolActivityBucket').implement({
  description: 'One of the equal parts of the window: the tool audits started and ended in it (by commit time).',
  fields: (t) => ({
    start: t.expose('start', { type: 'DateTime', description: 'Where the bucket begins; it ends where the next begins, the last at `at`.' }),
    started: t.exposeInt('started', { description: 'Tool audits started within the bucket.' }),
    completed: t.exposeInt('completed', { description: 'Tool audits that ended within the bucket, by how they ended.' }),
    failed: t.exposeInt('failed', { description: 'Tool audits that ended FAILED within the bucket.' }),
    otherEnded: t.exposeInt('otherEnded', { description: 'Tool audits that ended CANCELLED, INTERRUPTED or ABANDONED within the bucket.' }),
  }),
});

const ToolActivityOrderFieldEnum = builder.enumType('ToolActivityOrderField', {
  description: 'A column `ToolActivity.tools` can be ordered by (ToolActivityOrder).',
  values: {
    CALLS: { description: 'Running plus ended within the window: the most audits.' },
    FAILURE_RATE: { description: '`failed` over the audits that ended within the window; a tool with none ended has none.' },
    OTHER_ENDED: { description: '`otherEnded`.' },
    P50: { description: '`p50DurationMs`; a tool with no duration has none.' },
    P95: { description: '`p95DurationMs`; a tool with no duration has none.' },
    MAX: { description: '`maxDurationMs`; a tool with no duration has none.' },
    NAME: { description: 'The name, in Unicode code point order.' },
  },
});

const OrderDirectionEnum = builder.enumType('OrderDirection', {
  description: 'Which way a list is ordered.',
  values: { ASC: { description: 'The smallest first (names A to Z).' }, DESC: { description: 'The largest first (names Z to A).' } },
});

const ToolActivityOrderInput = builder.inputType('ToolActivityOrder', {
  description:
    'The order of `ToolActivity.tools`: by `field`, in `direction`. Tools that have no value in the field (none ended, for\nFAILURE_RATE; no duration, for P50, P95 and MAX) come last either way; ties are ordered by name A to Z either way.',
  fields: (t) => ({
    field: t.field({ type: ToolActivityOrderFieldEnum, required: true, description: 'The column.' }),
    direction: t.field({ type: OrderDirectionEnum, required: false, description: 'Left out: DESC, but ASC for NAME.' }),
  }),
});

const ToolActivityRef = builder.objectRef<ToolActivity>('ToolActivity').implement({
  description: 'Tool activity across the threads whose audits the caller may read, over a window that ends at\n`at`. Every field is one consistent read at `at`.',
  fields: (t) => ({
    at: t.expose('at', { type: 'DateTime', description: "When this view was read (the database's clock)." }),
    since: t.expose('since', { type: 'DateTime', description: 'The start of the window: `at` minus `windowSeconds`.' }),
    runningCount: t.exposeInt('runningCount', { description: 'How many tool audits are RUNNING now.' }),
    running: t.field({
      type: [ToolAuditRef],
      description: `Tool audits RUNNING now, the longest-running first. \`first\` is 1 to ${MAX_ACTIVITY_LIST}.`,
      args: { first: t.arg.int({ defaultValue: 20, description: `How many at most (1 to ${MAX_ACTIVITY_LIST}).` }) },
      complexity: ({ first }) => listCost(first, MAX_ACTIVITY_LIST),
      resolve: (view, { first }) => view.running.slice(0, activityListSize(first)),
    }),
    recentFailures: t.field({
      type: [ToolAuditRef],
      description: `Tool audits that ended FAILED within the window, the newest first. \`first\` is 1 to ${MAX_ACTIVITY_LIST}.`,
      args: { first: t.arg.int({ defaultValue: 20, description: `How many at most (1 to ${MAX_ACTIVITY_LIST}).` }) },
      complexity: ({ first }) => listCost(first, MAX_ACTIVITY_LIST),
      resolve: (view, { first }) => view.recentFailures.slice(0, activityListSize(first)),
    }),
    toolCount: t.int({
      description: 'How many tools `tools` lists when its `first` is left out: every tool name with an audit running now or ended within the window.',
      resolve: (view) => view.tools.length,
    }),
    tools: t.field({
      type: [ToolActivityStatRef],
      description: `One entry per tool name with an audit running now or started or ended within the window, in the order \`orderBy\` names; left out, the most audits first (CALLS, DESC). \`first\` (1 to ${MAX_ACTIVITY_TOOLS}) keeps the first so many of that order; left out, every tool.`,
      args: {
        first: t.arg.int({ required: false, description: `How many at most (1 to ${MAX_ACTIVITY_TOOLS}); left out, every tool.` }),
        orderBy: t.arg({ type: ToolActivityOrderInput, required: false, description: 'The order; left out, the most audits first.' }),
      },
      resolve: (view, { first, orderBy }) =>
        orderedTools(view.tools, orderBy && { field: orderBy.field, descending: orderBy.direction == null ? undefined : orderBy.direction === 'DESC' }).slice(
          0,
          activityToolsSize(first),
        ),
    }),
    buckets: t.field({
      type: [ToolActivityBucketRef],
      description: 'The window cut into equal buckets (at most 120), oldest first.',
      resolve: (view) => view.buckets,
    }),
  }),
});

const windowSecondsArg = {
  description: `The window's length in seconds (${MIN_WINDOW_SECONDS} to ${MAX_WINDOW_SECONDS}); it ends at the view's \`at\`.`,
};
const toolNameArg = { description: 'Only the tool of exactly this name; a blank name filters nothing.' };

/** The view's listed audits in the loaders' audit cache: a link back to one of them reads no row again. */
function primed(loaders: Loaders, view: ToolActivity): Loaders {
  for (const audit of [...view.running, ...view.recentFailures]) loaders.audit.prime(audit.id, audit);
  return loaders;
}

builder.queryField('toolActivity', (t) =>
  t.field({
    type: ToolActivityRef,
    description: `Tool activity across the caller's threads over the last \`windowSeconds\` (${MIN_WINDOW_SECONDS} to ${MAX_WINDOW_SECONDS}), for\nlive dashboards (docs/semantics.md, "Dashboards"). A superadmin's own threads; any other\nrole is FORBIDDEN. \`name\` keeps only that tool. At most ${MAX_WIDE_VIEWS_PER_PRINCIPAL} views over more than ${WIDE_WINDOW_SECONDS} seconds running at once per principal.`,
    authScopes: { authenticated: true },
    args: {
      windowSeconds: t.arg.int({ defaultValue: DEFAULT_WINDOW_SECONDS, ...windowSecondsArg }),
      name: t.arg.string({ required: false, ...toolNameArg }),
    },
    resolve: async (_root, { windowSeconds, name }, { deps, principal, loaders }) => {
      const caller = requirePrincipal(principal);
      const args = toolActivityArgs(windowSeconds, name);
      const read = () => readToolActivity(deps.db, caller, args);
      const view = args.windowSeconds > WIDE_WINDOW_SECONDS ? await withReadSlot('wideView', caller.sub, read) : await read();
      primed(loaders, view);
      return view;
    },
  }),
);

builder.subscriptionField('toolActivity', (t) =>
  t.field({
    type: ToolActivityRef,
    description:
      'A live dashboard: the current `toolActivity` view at once, then a new one after changes of\ntool audits in the caller\'s threads commit (docs/semantics.md, "Dashboards").',
    authScopes: { authenticated: true },
    args: {
      windowSeconds: t.arg.int({ defaultValue: DEFAULT_WINDOW_SECONDS, ...windowSecondsArg }),
      name: t.arg.string({ required: false, ...toolNameArg }),
    },
    subscribe: (_root, { windowSeconds, name }, { principal, pubsub }, info) => {
      const viewer = requirePrincipal(principal);
      requireAuditReader(viewer);
      const args = toolActivityArgs(windowSeconds, name);
      // The lists' sizes are checked where each view resolves them; checked now too, a size out
      // of range refuses the stream once, at its start, instead of failing every view it sends.
      for (const list of ['running', 'recentFailures']) for (const { first } of argumentsOfSelected(info, list)) activityListSize(first as number | null);
      for (const { first } of argumentsOfSelected(info, 'tools')) activityToolsSize(first as number | null);
      return pubsub.activity.subscribe(viewer.sub, args, viewer.expiresAtMs);
    },
    resolve: (delivery: ActivityDelivery, _args, context) => {
      // Only the server stopping or the token expiring ends a stream early.
      if (delivery instanceof StreamInterrupted) {
        throw createGraphQLError(delivery.message, { extensions: { code: 'SUBSCRIPTION_INTERRUPTED', reason: delivery.reason } });
      }
      // Each view's audits link to their runs and threads as they are at that view.
      loadersForEvent(context, delivery, () => primed(createLoaders(context.deps), delivery));
      return delivery;
    },
  }),
);
