// Issue 43 item 7: "expected outages in one line each". A poll or a sweep that retries every
// second must not write a line per try through a database outage (a 1 s restart wrote ~720 lines).
import { afterEach, describe, expect, it } from 'vitest';
import { retriedWork } from '../../src/db/outage.js';
import { onLogLine } from '../../src/log.js';

const lines: { level: string; msg: string; [field: string]: unknown }[] = [];
onLogLine((line) => lines.push(JSON.parse(line) as (typeof lines)[number]));
afterEach(() => void lines.splice(0));

// pg's own errors for a lost connection carry no code; the socket's carry its errno name.
const reset = () => Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
const terminated = () => new Error('Connection terminated unexpectedly');
const unanswered = () => new Error('Query read timeout');
const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });

describe('a job retried through an outage', () => {
  it('logs one warning when it starts failing and one line when it works again, whatever the number of tries', () => {
    const job = retriedWork('change-poll', 'reading the thread cursors', { component: 'realtime' });
    job.succeeded();
    for (let i = 0; i < 20; i++) job.failed(refused());
    job.succeeded();
    job.succeeded();
    expect(lines).toEqual([
      expect.objectContaining({ level: 'warn', component: 'realtime', msg: 'reading the thread cursors failed: the database cannot be reached; retrying', error: { message: 'connect ECONNREFUSED 127.0.0.1:5432', code: 'ECONNREFUSED' } }),
      expect.objectContaining({ level: 'info', component: 'realtime', msg: 'reading the thread cursors works again', failedTries: 20, failedForMs: expect.any(Number) }),
    ]);
  });

  it('logs an unexpected failure as an error, and again when the failure changes', () => {
    const job = retriedWork('lease-sweep', 'lease sweep', { component: 'lease-sweeper' });
    job.failed(new Error('a bug'));
    job.failed(new Error('a bug'));
    job.failed(refused());
    job.failed(refused());
    expect(lines.map((line) => [line.level, line.msg])).toEqual([
      ['error', 'lease sweep failed; retrying'],
      ['warn', 'lease sweep failed: the database cannot be reached; retrying'],
    ]);
  });

  // The chaos report's finding 4: in one 4 s outage the error alternated between a reset and pg's
  // "Connection terminated unexpectedly", and each switch was a new line, with pg-pool's stack.
  it('logs the ways a connection fails in one outage (reset, terminated, unanswered, refused) as one warning, without a stack', () => {
    const job = retriedWork('lease-sweep', 'lease sweep', { component: 'lease-sweeper' });
    for (const error of [reset(), terminated(), reset(), unanswered(), terminated(), refused()]) job.failed(error);
    job.succeeded();
    expect(lines).toEqual([
      expect.objectContaining({ level: 'warn', msg: 'lease sweep failed: the database cannot be reached; retrying', error: { message: 'read ECONNRESET', code: 'ECONNRESET' } }),
      expect.objectContaining({ level: 'info', msg: 'lease sweep works again', failedTries: 6 }),
    ]);
    job.failed(terminated());
    expect(lines[2]).toEqual(expect.objectContaining({ level: 'warn', error: { message: 'Connection terminated unexpectedly' } }));
  });
});
