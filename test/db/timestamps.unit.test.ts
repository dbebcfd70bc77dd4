import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { timestampParser } from '../../src/db/sql.js';

// The server reads timestamptz text itself (src/db/sql.ts): it must mean exactly what the
// driver's own parser makes of it, and serialize as Date#toISOString would.
const driversOwn = pg.types.getTypeParser(1184) as (text: string) => Date;
const parse = timestampParser(driversOwn) as (text: string) => Date;

describe('timestamps read from PostgreSQL', () => {
  it.each([
    '2026-12-01 06:12:08+00',
    '2026-12-01 06:12:08.7+00',
    '2026-12-01 06:12:08.79+00',
    '2026-12-01 06:12:08.790+00',
    '2026-12-01 06:12:08.123456+00',
    '1999-02-28 23:59:59.999+00',
    '2026-12-01 08:12:08.79+02',
    '2026-12-01 06:12:08.79+05:30',
    '0044-03-15 12:00:00+00 BC',
  ])('%s is the instant the driver reads, in its ISO form', (text) => {
    const date = parse(text);
    expect(date).toBeInstanceOf(Date);
    expect(date.getTime()).toBe(driversOwn(text).getTime());
    expect(date.toISOString()).toBe(new Date(date.getTime()).toISOString());
    expect(JSON.stringify({ date })).toBe(JSON.stringify({ date: new Date(date.getTime()) }));
  });
});
