// RFC 3339 with an explicit offset or Z; a local time without a zone is ambiguous.
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:Z|[+-](\d{2}):(\d{2}))$/i;

const isLeap = (year: number) => year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const daysIn = (year: number, month: number) => (month === 2 && isLeap(year) ? 29 : DAYS_IN_MONTH[month - 1]!);

// The instants every timestamp column holds with a four-digit year, on both databases:
// PostgreSQL refuses year 0, and past 9999 Date#toISOString stops writing RFC 3339.
const FIRST_INSTANT = Date.parse('0001-01-01T00:00:00Z');
const LAST_INSTANT = Date.parse('9999-12-31T23:59:59.999Z');

/**
 * The instant an RFC 3339 timestamp names, or null when it names none or one the database cannot
 * hold: no 30 February, no 24:00 or leap second, an offset within ±23:59, a year from 1 to 9999
 * once in UTC. (`new Date` alone rolls 30 February over into March.)
 */
export function parseInstant(text: string): Date | null {
  const parts = RFC3339.exec(text);
  if (!parts) return null;
  const [year, month, day, hour, minute, second, offsetHours, offsetMinutes] = parts.slice(1).map((part) => Number(part ?? 0));
  if (month! < 1 || month! > 12 || day! < 1 || day! > daysIn(year!, month!)) return null;
  if (hour! > 23 || minute! > 59 || second! > 59 || offsetHours! > 23 || offsetMinutes! > 59) return null;
  const instant = new Date(text);
  const ms = instant.getTime();
  return ms >= FIRST_INSTANT && ms <= LAST_INSTANT ? instant : null;
}
