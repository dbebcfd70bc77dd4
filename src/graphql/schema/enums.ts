import { AuditStatus, MessageRole, RunStatus, ToolCallStatus } from '../../generated/prisma/enums.js';
import { builder } from '../builder.js';

export const RunStatusEnum = builder.enumType(RunStatus, {
  name: 'RunStatus',
  description: 'Where a run is: QUEUED until a worker claims it, RUNNING under its lease, then how it ended.',
  values: {
    QUEUED: { description: 'Created (createRun) and not claimed yet.' },
    RUNNING: { description: 'Claimed by a worker, which holds its lease (leaseOwner, leaseEpoch, leaseExpiresAt).' },
    COMPLETED: { description: "Ended by its worker's finishRun COMPLETED." },
    FAILED: { description: 'Ended by its worker\'s finishRun FAILED, or by its lease expiring (error {code: "LEASE_EXPIRED"}).' },
    CANCELLED: { description: "Ended by cancelRun, or by its worker's finishRun CANCELLED." },
    INTERRUPTED: { description: "Ended by its worker's finishRun INTERRUPTED (e.g. to wait for a human); a new run may resume it." },
  },
});
export const RunTerminalStatusEnum = builder.enumType('RunTerminalStatus', {
  description: 'The terminal statuses an agent runtime may report in finishRun.',
  values: {
    COMPLETED: { description: 'The run succeeded. Audits still open close ABANDONED (a bare error: FAILED when the final state says so).' },
    FAILED: { description: 'The run failed. Audits still open close FAILED.' },
    CANCELLED: { description: 'The run was cancelled. Audits still open close CANCELLED.' },
    INTERRUPTED: { description: 'The run paused, for a resume. Audits still open close INTERRUPTED and their ToolCalls go back to PENDING.' },
  },
});
export const AuditStatusEnum = builder.enumType(AuditStatus, {
  name: 'AuditStatus',
  description: "Where a model or tool audit is: RUNNING until its own terminal event or its run's end closes it.",
  values: {
    RUNNING: { description: "Started and not closed yet; a tool audit with a bare error stays RUNNING (awaitingRunTerminal) until the run's verdict." },
    COMPLETED: { description: 'Closed by its own finish: a model call finished COMPLETED, a tool output without `status: "error"`.' },
    FAILED: {
      description:
        'A model call finished FAILED, a tool output with `status: "error"`, or closed by a FAILED run (or a COMPLETED one whose final state holds the bare error).',
    },
    CANCELLED: { description: 'Closed by the run being cancelled (cancelRun or finishRun CANCELLED).' },
    INTERRUPTED: { description: 'Closed by finishRun INTERRUPTED; a resumed run may run the tool again, as a new audit.' },
    ABANDONED: { description: "Closed by the run's end or a lease expiry without a terminal event of its own." },
  },
});
export const AuditKindEnum = builder.enumType('AuditKind', {
  description: 'Which audits a search reads (searchAudits `kind`).',
  values: {
    MODEL: { description: 'Model calls: ModelAudit, role ASSISTANT.' },
    TOOL: { description: 'Tool executions: ToolAudit, role TOOL.' },
  },
});
export const ToolCallStatusEnum = builder.enumType(ToolCallStatus, {
  name: 'ToolCallStatus',
  description: "A ToolCall's status: PENDING as declared, then its latest execution's, mirrored from the tool audit.",
  values: {
    PENDING: { description: 'Declared and not started, or its execution was INTERRUPTED: a resume may start it.' },
    RUNNING: { description: 'Its tool audit is RUNNING (a bare error awaiting the run\'s verdict included).' },
    COMPLETED: { description: 'Its tool audit ended COMPLETED.' },
    FAILED: { description: 'Its tool audit ended FAILED or ABANDONED.' },
    CANCELLED: { description: 'Its tool audit ended CANCELLED.' },
  },
});
export const MessageRoleEnum = builder.enumType(MessageRole, {
  name: 'MessageRole',
  description: "Who a message speaks for, as appended; a model audit's role is ASSISTANT, a tool audit's TOOL.",
  values: {
    USER: { description: "A user's message." },
    ASSISTANT: { description: "The model's message; the role of every model audit." },
    SYSTEM: { description: 'A system message.' },
    TOOL: { description: "A tool's result; the role of every tool audit." },
  },
});
