import { builder } from '../builder.js';

export const LeaseInput = builder.inputType('LeaseInput', {
  description: 'Proof that the caller holds the run\'s current lease. The owner is the authenticated worker.',
  fields: (t) => ({
    runId: t.id({ required: true }),
    epoch: t.int({ required: true }),
  }),
});

export const ClockReadingInput = builder.inputType('ClockReadingInput', {
  description: 'One reading of a monotonic clock. Durations are computed only between readings of the same clockId.',
  fields: (t) => ({
    clockId: t.string({ required: true }),
    nanos: t.field({ type: 'BigInt', required: true }),
  }),
});
