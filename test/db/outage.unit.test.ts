// Which failures are an outage the client may retry (UNAVAILABLE, 503 with Retry-After), judged
// by SQLSTATE, severity or errno, never by message text: src/db/outage.ts.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { isProgramLimit, isUnavailable } from '../../src/db/outage.js';

/** An error as pg reads it from the server's ErrorResponse. */
function serverError(code: string, severity: 'FATAL' | 'ERROR', message: string): pg.DatabaseError {
  return Object.assign(new pg.DatabaseError(message, message.length, 'error'), { code, severity });
}

/** The same error as Prisma's pg adapter passes it on (its `postgres` kind keeps code and severity). */
function throughPrisma(error: pg.DatabaseError): Error {
  const cause = { kind: 'postgres', code: error.code, severity: error.severity, message: error.message, originalCode: error.code, originalMessage: error.message };
  return Object.assign(new Error('Invalid `prisma.thread.findMany()` invocation'), { code: 'P2010', meta: { driverAdapterError: Object.assign(new Error('postgres'), { cause }) } });
}

describe('isUnavailable', () => {
  const notAccepting = serverError('55000', 'FATAL', 'database "audit" is not currently accepting connections');
  const startingUp = serverError('57P03', 'FATAL', 'the database system is starting up');

  it('takes a database that is not accepting connections (ALTER DATABASE … ALLOW_CONNECTIONS false) as an outage, from pg and through Prisma', () => {
    expect(isUnavailable(notAccepting)).toBe(true);
    expect(isUnavailable(throughPrisma(notAccepting))).toBe(true);
  });

  it('takes a server that cannot take connections now (starting up, in recovery) as an outage', () => {
    expect(isUnavailable(startingUp)).toBe(true);
    expect(isUnavailable(throughPrisma(startingUp))).toBe(true);
  });

  it("does not take a statement's 55000 (object not in prerequisite state) for one: that is no connection refused, but a bug to see", () => {
    const statement = serverError('55000', 'ERROR', 'currval of sequence "run_created_order_seq" is not yet defined in this session');
    expect(isUnavailable(statement)).toBe(false);
    expect(isUnavailable(throughPrisma(statement))).toBe(false);
  });
});

describe('a statement the server could not bind', () => {
  it("does not take a protocol violation raised as an ERROR (08P01: a bind with more parameters than the statement has) for an outage, though its class is 08: a bug to see, not a retry", () => {
    const violation = serverError('08P01', 'ERROR', 'bind message supplies 3 parameters, but prepared statement "" requires 1');
    expect(isUnavailable(violation)).toBe(false);
    expect(isUnavailable(throughPrisma(violation))).toBe(false);
  });

  it('takes 08P01 raised FATAL for one, as PgBouncer ends a session it cannot serve, and the rest of class 08 at any severity', () => {
    for (const ended of [serverError('08P01', 'FATAL', 'query_wait_timeout'), serverError('08006', 'ERROR', 'connection failure')]) {
      expect(isUnavailable(ended), ended.code).toBe(true);
      expect(isUnavailable(throughPrisma(ended)), ended.code).toBe(true);
    }
  });
});

describe('a statement the database gave up on', () => {
  it('takes a statement timeout (57014) and a lock timeout (55P03) as passing trouble, from pg and through Prisma: the transaction rolled back', () => {
    for (const timedOut of [
      serverError('57014', 'ERROR', 'canceling statement due to statement timeout'),
      serverError('55P03', 'ERROR', 'canceling statement due to lock timeout'),
    ]) {
      expect(isUnavailable(timedOut), timedOut.code).toBe(true);
      expect(isUnavailable(throughPrisma(timedOut)), timedOut.code).toBe(true);
    }
  });
});

describe('a statement past a size limit of the database', () => {
  it('takes program_limit_exceeded (54000) as such, from pg and through Prisma, and not as an outage: the same request fails again', () => {
    const tooLarge = serverError('54000', 'ERROR', 'total size of jsonb object elements exceeds the maximum of 268435455 bytes');
    for (const error of [tooLarge, throughPrisma(tooLarge)]) {
      expect(isProgramLimit(error)).toBe(true);
      expect(isUnavailable(error)).toBe(false);
    }
    expect(isProgramLimit(serverError('57014', 'ERROR', 'canceling statement due to statement timeout'))).toBe(false);
  });
});
