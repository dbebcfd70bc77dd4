import { badInput } from './errors.js';

/**
 * A time window of a newest-first read (`searchAudits`, `toolCallLedger`): `since` inclusive,
 * `until` exclusive, either left out for no bound.
 */
export interface RecordedWindow {
  since?: Date | null;
  until?: Date | null;
}

/** The last millisecond a UUIDv7's 48-bit time can hold. */
const LAST_ID_MS = 2 ** 48 - 1;

/** The smallest UUID whose time part is `at`'s millisecond (or the nearest a time part can hold). */
function firstIdAt(at: Date): string {
  const hex = Math.min(Math.max(at.getTime(), 0), LAST_ID_MS).toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8)}-0000-0000-000000000000`;
}

/**
 * The window as conditions on `idColumn`: a row is in it when the server recorded it at or after
 * `since` and before `until`, to the millisecond. That time is the one its id carries (a UUIDv7
 * whose time part is the database's clock as the instance read it: src/domain/ids.ts `newId`),
 * the time the pages are ordered by, so the window is a range of the index a read already walks
 * newest first: the walk starts at `until` and stops at `since`, whatever the history's size. Not
 * a worker's `startedAt`, which is its own clock as sent (a batch resent after an outage carries
 * the times it happened at) and which a ToolCall's latest execution resets on a resume.
 */
export function recordedWindow(window: RecordedWindow, idColumn: string, param: (value: unknown) => string): string[] {
  const { since, until } = checkedWindow(window);
  const conditions: string[] = [];
  if (since != null) conditions.push(`${idColumn} >= ${param(firstIdAt(since))}::uuid`);
  if (until != null) conditions.push(`${idColumn} < ${param(firstIdAt(until))}::uuid`);
  return conditions;
}

/** The window, unless its `until` is not later than its `since`: BAD_USER_INPUT. */
export function checkedWindow(window: RecordedWindow): RecordedWindow {
  const { since, until } = window;
  if (since != null && until != null && until.getTime() <= since.getTime()) {
    throw badInput(`until (${until.toISOString()}) must be later than since (${since.toISOString()}): the window holds since up to, not including, until`);
  }
  return window;
}
