import { randomUUID } from 'node:crypto';
import type { BigIntLike, ClockReadingInput } from './types.js';

/**
 * Identifies this process's monotonic clock: `process.hrtime` readings are only comparable
 * within one process, so the server computes a duration only between readings with one id.
 */
export const PROCESS_CLOCK_ID = `node-${process.pid}-${randomUUID()}`;

/** Reads the monotonic clock now. */
export function readClock(clockId: string = PROCESS_CLOCK_ID): { clockId: string; nanos: string } {
  return { clockId, nanos: process.hrtime.bigint().toString() };
}

/**
 * A BigInt value as the decimal string the server takes. A number that is no integer (NaN, 1.5,
 * Infinity) is a RangeError naming `field` and the value, as the server names a variable's path.
 */
export function toBigIntString(value: BigIntLike, field: string): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && !Number.isInteger(value)) throw new RangeError(`${field} must be an integer, not ${value}`);
  return BigInt(value).toString();
}

export function toClockInput(reading: ClockReadingInput): { clockId: string; nanos: string } {
  return { clockId: reading.clockId, nanos: toBigIntString(reading.nanos, 'clock.nanos') };
}

/**
 * The runtime's root stream sequence for one run: strictly increasing, starting at `start`.
 * Use one counter per run and take a number when the event happens, not when it is sent.
 */
export class SequenceCounter {
  private nextValue: bigint;

  constructor(start: BigIntLike = 0n) {
    this.nextValue = BigInt(start);
  }

  next(): string {
    const value = this.nextValue;
    this.nextValue += 1n;
    return value.toString();
  }
}
