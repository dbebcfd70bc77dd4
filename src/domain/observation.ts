import type { Limits } from './command.js';
import { badInput } from './errors.js';
import { assertStorableJson } from './json.js';
import { nonBlank } from './ids.js';

/** One reading of a monotonic clock; durations exist only between readings of one clockId. */
export interface ClockReading {
  clockId: string;
  nanos: bigint;
}

/** When and where in the runtime's root stream a lifecycle event was observed. */
export interface Observation {
  sequence?: bigint | null;
  observedAt: Date;
  clock?: ClockReading | null;
}

export function checkObservation(observation: Observation): void {
  if (observation.sequence !== undefined && observation.sequence !== null && observation.sequence < 0n) {
    throw badInput('sequence must be a non-negative integer');
  }
  if (observation.clock) {
    nonBlank(observation.clock.clockId, 'clock.clockId');
    if (observation.clock.nanos < 0n) throw badInput('clock.nanos must be non-negative');
  }
}

export function checkJsonFields(limits: Limits, fields: Record<string, unknown>): void {
  for (const [name, value] of Object.entries(fields)) assertStorableJson(value, limits.maxJsonBytes, name);
}
