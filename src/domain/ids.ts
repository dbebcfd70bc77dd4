import { randomBytes } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import type { Sql } from '../db/sql.js';
import { badInput, notFound } from './errors.js';
import { assertStorableText } from './json.js';

/** Ids and names are keys of btree indexes and labels on a dashboard, never documents. */
export const MAX_ID_LENGTH = 256;

/**
 * Whether `value` holds more than `max` characters as a person counts them (code points: an emoji
 * is one, where `length` counts two), counting no further than that: a text may be megabytes long.
 */
function longerThan(value: string, max: number): boolean {
  // `length` is never less than the characters: only a text over it by that measure is counted.
  if (value.length <= max) return false;
  let characters = 0;
  for (const _ of value) if (++characters > max) return true;
  return false;
}

/**
 * The one check of text a principal gives (names, titles, search terms): at most `maxLength`
 * characters, and storable (no NUL, no unpaired surrogate: json.ts), else BAD_USER_INPUT.
 */
/**
 * A read's `name` filter: the tool (or model) of exactly that name, since names are stored as
 * written, spaces included; a blank one filters nothing, as no name is blank.
 */
export function nameFilter(value: string | null | undefined): string | null {
  return value == null || value.trim() === '' ? null : boundedText(value, 'name');
}

export function boundedText(value: string, field: string, maxLength = MAX_ID_LENGTH): string {
  if (longerThan(value, maxLength)) throw badInput(`${field} is longer than its limit of ${maxLength} characters`);
  assertStorableText(value, field);
  return value;
}

/** `text` as a LIKE pattern matching only itself (its `\\`, `%` and `_` escaped). */
export const escapeLike = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const isUuid = (value: string) => UUID.test(value);

/** How far the database's clock is ahead of this process's, in ms, as last read (readDatabaseClock). */
let databaseAheadMs = 0;
/** The last id's time and counter: ids one process makes are increasing, as uuid's own v7 makes them. */
const last = { msecs: -Infinity, seq: 0 };

/**
 * A new row's id: a UUIDv7, whose leading 48 bits are the time. New rows' ids (and the run ids
 * that lead the audit and tool-call indexes) then land at the right edge of their btrees instead
 * of on a random leaf each, so a write touches the same few pages however large the tables grow
 * (bench/results/recorded/HISTORY.md, the write curve). Ids stay opaque to clients, but lists read
 * newest first by them (the ledger, audit search): their time is the database's clock, as this
 * process last read it, so ids made on instances whose clocks differ keep the order they were made in.
 */
export function newId(): string {
  const random = randomBytes(16);
  const now = Date.now() + databaseAheadMs;
  if (now > last.msecs) Object.assign(last, { msecs: now, seq: random.readUInt32BE(6) & 0x7fffffff });
  else if ((last.seq = (last.seq + 1) | 0) === 0) last.msecs++;
  return uuidv7({ msecs: last.msecs, seq: last.seq, random });
}

/** The statement readDatabaseClock sends. */
export const DATABASE_CLOCK_READ = 'SELECT clock_timestamp() AS at';

/** Reads the database's clock for new ids (newId): at start-up, then every minute (background-jobs.ts). */
export async function readDatabaseClock(sql: Pick<Sql, 'query'>): Promise<void> {
  const sentAt = Date.now();
  const [row] = await sql.query<{ at: Date }>(DATABASE_CLOCK_READ);
  databaseAheadMs = Math.round(row!.at.getTime() - (sentAt + Date.now()) / 2);
}

/**
 * Rows are keyed by UUIDs. A blank id is malformed input; any other id that is not a UUID
 * cannot name a row, so it is reported as not found rather than reaching the database.
 */
export function rowId(value: string, what: string): string {
  if (value.trim() === '') throw badInput(`${what} id must not be blank`);
  boundedText(value, `${what} id`);
  if (!UUID.test(value)) throw notFound(what, value);
  return value.toLowerCase();
}

/** Runtime-chosen identifiers and names (operation ids, tool_call_ids, clock ids, tool names): non-blank, at most 256 characters. */
export function nonBlank(value: string, field: string): string {
  if (value.trim() === '') throw badInput(`${field} must not be blank`);
  return boundedName(value, field);
}

/** An optional name (a model's): may be blank, never longer than 256 characters. */
export function boundedName(value: string, field: string): string {
  return boundedText(value, field);
}
