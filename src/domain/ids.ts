import { badInput, notFound } from './errors.js';
import { assertStorableText } from './json.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Rows are keyed by UUIDs. A blank id is malformed input; any other id that is not a UUID
 * cannot name a row, so it is reported as not found rather than reaching the database.
 */
export function rowId(value: string, what: string): string {
  if (value.trim() === '') throw badInput(`${what} id must not be blank`);
  if (!UUID.test(value)) throw notFound(what, value);
  return value.toLowerCase();
}

/** Runtime-chosen identifiers (operation ids, tool_call_ids, clock ids): any non-blank string. */
export function nonBlank(value: string, field: string): string {
  if (value.trim() === '') throw badInput(`${field} must not be blank`);
  assertStorableText(value, field);
  return value;
}
