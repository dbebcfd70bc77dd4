import { requirePrincipal } from '../../domain/access.js';
import { cancelRun } from '../../domain/convergence.js';
import { createRun, loadReadableRun } from '../../domain/runs.js';
import { payloadField } from '../answer-payloads.js';
import { builder } from '../builder.js';
import { loadRequired } from '../loaders.js';
import { RunStatusEnum } from './enums.js';

export const RunRef = builder.prismaObject('Run', {
  description: "One run of the agent in a thread: QUEUED, claimed by a worker under a lease, then ended; its audits are its timeline.",
  fields: (t) => ({
    id: t.exposeID('id', { description: "The run's id." }),
    status: t.expose('status', { type: RunStatusEnum, description: 'Where the run is: QUEUED, RUNNING, or how it ended.' }),
    leaseOwner: t.exposeString('leaseOwner', {
      nullable: true,
      description: 'The `sub` of the worker holding its lease; null while QUEUED and once ended.',
    }),
    leaseEpoch: t.exposeInt('leaseEpoch', { description: 'The fencing token: incremented on every successful claim.' }),
    leaseExpiresAt: t.expose('leaseExpiresAt', {
      type: 'DateTime',
      nullable: true,
      description: "When its lease expires unless renewed (the database's clock); null while QUEUED and once ended.",
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When createRun created it.' }),
    startedAt: t.expose('startedAt', {
      type: 'DateTime',
      nullable: true,
      description: "When a worker claimed it (the database's clock); null until then (a run cancelled while QUEUED never gets one).",
    }),
    finishedAt: t.expose('finishedAt', {
      type: 'DateTime',
      nullable: true,
      description: "When it ended by finishRun, cancelRun or its lease's expiry (the database's clock); null until then.",
    }),
    error: t.field({
      type: 'JSON',
      nullable: true,
      description: 'Why the run failed or was cancelled, e.g. {code: "LEASE_EXPIRED"}.',
      // A run's error (up to MAX_JSON_BYTES) is charged by its size before it is read
      // (answer-payloads.ts): reads leave it out (runsByIds, runsOfThreads) and type their rows as
      // whole runs, `error` undefined; a mutation's or a change's own row holds it.
      resolve: (run, _args, { loaders }) =>
        payloadField(
          (run as Partial<Pick<typeof run, 'error'>>).error,
          async () => (await loadRequired(loaders.runErrorBytes, run.id)).errorBytes,
          async () => (await loadRequired(loaders.runError, run.id)).error,
        ),
    }),
  }),
});

export const RunLeaseRef = builder
  .objectRef<{ runId: string; owner: string; epoch: number; expiresAt: Date; grantedAt: Date }>('RunLease')
  .implement({
    description: 'The lease a worker holds on a RUNNING run: every lifecycle write carries its `{runId, epoch}` as `lease`.',
    fields: (t) => ({
      runId: t.exposeID('runId', { description: 'The leased run.' }),
      owner: t.exposeString('owner', { description: 'The `sub` of the worker holding it: the caller.' }),
      epoch: t.exposeInt('epoch', {
        description: "The fencing token, the run's leaseEpoch: the claim increments it, renewals and claim retries keep it; every lifecycle write sends it in `lease`.",
      }),
      expiresAt: t.expose('expiresAt', {
        type: 'DateTime',
        description: "When it expires unless renewed (the database's clock): expiresAt − grantedAt is its length.",
      }),
      grantedAt: t.expose('grantedAt', {
        type: 'DateTime',
        description:
          "When the database took or last extended this lease, on the clock expiresAt is read on: expiresAt − grantedAt\nis how long the lease lasts from then, whatever the worker's own clock says.",
      }),
    }),
  });

const CreateRunInput = builder.inputType('CreateRunInput', {
  description: 'A run to create: its thread and, for a resume, the ended run it continues.',
  fields: (t) => ({
    threadId: t.id({ required: true, description: 'The thread to create it in.' }),
    resumeFromRunId: t.id({ description: 'Resume an earlier run of the same thread; it must have ended.' }),
    createId: t.string({
      description:
        "The caller's idempotency key for this creation (1 to 256 characters), one per thread. The\nsame createId again in the same thread gets the run the first send created, instead of a\nsecond one; with another resumeFromRunId it is CONFLICT.",
    }),
  }),
});

builder.queryField('run', (t) =>
  t.field({
    type: RunRef,
    nullable: true,
    description:
      "A run by id: its thread's owner, an admin or a superadmin (anyone else is FORBIDDEN); a run that does not exist, or whose thread is being deleted, is NOT_FOUND.",
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true, description: "The run's id." }) },
    resolve: async (_root, { id }, { deps, loaders, principal }) => {
      const run = await loadReadableRun(deps.db, requirePrincipal(principal), id);
      // Checked readable first, read again without its error (charged before it is read): a deletion in between marked its thread.
      return loadRequired(loaders.run, run.id);
    },
  }),
);

builder.mutationFields((t) => ({
  createRun: t.prismaField({
    type: 'Run',
    description: 'The thread owner, an admin or a superadmin. Creates a QUEUED run.',
    authScopes: { authenticated: true },
    args: { input: t.arg({ type: CreateRunInput, required: true, description: 'The thread, and the run it resumes, if any.' }) },
    resolve: (_query, _root, { input }, { deps, principal }) => createRun(deps, requirePrincipal(principal), input),
  }),
  cancelRun: t.prismaField({
    type: 'Run',
    description: 'The thread owner, an admin or a superadmin. Ends the run as CANCELLED at once and revokes its lease.',
    authScopes: { authenticated: true },
    args: { runId: t.arg.id({ required: true, description: 'The run to cancel: QUEUED or RUNNING, else INVALID_TRANSITION.' }) },
    resolve: (_query, _root, { runId }, { deps, principal }) => cancelRun(deps, requirePrincipal(principal), runId),
  }),
}));
