import { requirePrincipal } from '../../domain/access.js';
import { cancelRun, finishRun } from '../../domain/convergence.js';
import { claimRun, renewLease } from '../../domain/lease.js';
import { createRun, loadReadableRun } from '../../domain/runs.js';
import { builder } from '../builder.js';
import { RunStatusEnum, RunTerminalStatusEnum } from './enums.js';
import { LeaseInput } from './lifecycle-inputs.js';

builder.prismaObject('Run', {
  fields: (t) => ({
    id: t.exposeID('id'),
    thread: t.relation('thread'),
    status: t.expose('status', { type: RunStatusEnum }),
    resumedFrom: t.relation('resumedFrom', {
      nullable: true,
      description: 'The run this run resumes, if any (always in the same thread).',
    }),
    leaseOwner: t.exposeString('leaseOwner', { nullable: true }),
    leaseEpoch: t.exposeInt('leaseEpoch', { description: 'The fencing token: incremented on every successful claim.' }),
    leaseExpiresAt: t.expose('leaseExpiresAt', { type: 'DateTime', nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    startedAt: t.expose('startedAt', { type: 'DateTime', nullable: true }),
    finishedAt: t.expose('finishedAt', { type: 'DateTime', nullable: true }),
    error: t.expose('error', {
      type: 'JSON',
      nullable: true,
      description: 'Why the run failed or was cancelled, e.g. {code: "LEASE_EXPIRED"}.',
    }),
    toolCalls: t.relation('toolCalls', {
      description: "The ToolCall projection of the calls declared by this run's model audits, in declaration order.",
      query: { orderBy: [{ declaredBy: { sequence: 'asc' } }, { position: 'asc' }] },
    }),
  }),
});

export const RunLeaseRef = builder
  .objectRef<{ runId: string; owner: string; epoch: number; expiresAt: Date }>('RunLease')
  .implement({
    fields: (t) => ({
      runId: t.exposeID('runId'),
      owner: t.exposeString('owner'),
      epoch: t.exposeInt('epoch'),
      expiresAt: t.expose('expiresAt', { type: 'DateTime' }),
    }),
  });

const CreateRunInput = builder.inputType('CreateRunInput', {
  fields: (t) => ({
    threadId: t.id({ required: true }),
    resumeFromRunId: t.id({ description: 'Resume an earlier run of the same thread; it must have ended.' }),
  }),
});

const ClaimRunInput = builder.inputType('ClaimRunInput', {
  fields: (t) => ({
    runId: t.id({ required: true }),
    leaseSeconds: t.int({ defaultValue: 30, description: 'Lease length; the server clamps it to its configured bounds.' }),
  }),
});

const FinishRunInput = builder.inputType('FinishRunInput', {
  fields: (t) => ({
    lease: t.field({ type: LeaseInput, required: true }),
    status: t.field({ type: RunTerminalStatusEnum, required: true }),
    error: t.field({ type: 'JSON' }),
    stateMessages: t.field({
      type: ['JSON'],
      defaultValue: [],
      description: "The final state's messages (the full checkpoint), used only to complete bare tool errors.",
    }),
  }),
});

const worker = { role: 'worker' } as const;

builder.queryField('run', (t) =>
  t.prismaField({
    type: 'Run',
    nullable: true,
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }) },
    resolve: async (query, _root, { id }, { deps, principal }) => {
      const run = await loadReadableRun(deps.prisma, requirePrincipal(principal), id);
      return deps.prisma.run.findUnique({ ...query, where: { id: run.id } });
    },
  }),
);

builder.mutationFields((t) => ({
  createRun: t.prismaField({
    type: 'Run',
    description: 'The thread owner. Creates a QUEUED run.',
    authScopes: { authenticated: true },
    args: { input: t.arg({ type: CreateRunInput, required: true }) },
    resolve: (_query, _root, { input }, { deps, principal }) => createRun(deps, requirePrincipal(principal), input),
  }),
  cancelRun: t.prismaField({
    type: 'Run',
    description: 'The thread owner or an admin. Ends the run as CANCELLED at once and revokes its lease.',
    authScopes: { authenticated: true },
    args: { runId: t.arg.id({ required: true }) },
    resolve: (_query, _root, { runId }, { deps, principal }) => cancelRun(deps, requirePrincipal(principal), runId),
  }),
  claimRun: t.field({
    type: RunLeaseRef,
    description: 'Workers only. QUEUED -> RUNNING with the caller as owner and a new epoch.',
    authScopes: worker,
    args: { input: t.arg({ type: ClaimRunInput, required: true }) },
    resolve: (_root, { input }, { deps, principal }) => claimRun(deps, requirePrincipal(principal), input),
  }),
  renewLease: t.field({
    type: RunLeaseRef,
    authScopes: worker,
    args: {
      lease: t.arg({ type: LeaseInput, required: true }),
      leaseSeconds: t.arg.int({ defaultValue: 30 }),
    },
    resolve: (_root, { lease, leaseSeconds }, { deps, principal }) =>
      renewLease(deps, requirePrincipal(principal), lease, leaseSeconds),
  }),
  finishRun: t.prismaField({
    type: 'Run',
    authScopes: worker,
    args: { input: t.arg({ type: FinishRunInput, required: true }) },
    resolve: (_query, _root, { input }, { deps, principal }) => finishRun(deps, requirePrincipal(principal), input),
  }),
}));
