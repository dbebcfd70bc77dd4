import { AuditStatus, MessageRole, RunStatus, ToolCallStatus } from '../../generated/prisma/enums.js';
import { builder } from '../builder.js';

export const RunStatusEnum = builder.enumType(RunStatus, { name: 'RunStatus' });
export const RunTerminalStatusEnum = builder.enumType('RunTerminalStatus', {
  description: 'The terminal statuses an agent runtime may report in finishRun.',
  values: ['COMPLETED', 'FAILED', 'CANCELLED', 'INTERRUPTED'] as const,
});
export const AuditStatusEnum = builder.enumType(AuditStatus, {
  name: 'AuditStatus',
  values: {
    RUNNING: {},
    COMPLETED: {},
    FAILED: {},
    CANCELLED: {},
    INTERRUPTED: {},
    ABANDONED: { description: "Closed by the run's end or a lease expiry without a terminal event of its own." },
  },
});
export const ToolCallStatusEnum = builder.enumType(ToolCallStatus, { name: 'ToolCallStatus' });
export const MessageRoleEnum = builder.enumType(MessageRole, { name: 'MessageRole' });
