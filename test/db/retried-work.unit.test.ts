// Issue 43 item 7: "expected outages in one line each". A poll or a sweep that retries every
// second must not write a line per try through a database outage (a 1 s restart wrote ~720 lines).
import { afterEach, describe, expect, it } from 'vitest';
import { retriedWork } from '../../src/db/outage.js';
import { onLogLine } from '../../src/log.js';

const lines: { level: string; msg: string; [field: string]: unknown }[] = [];
onLogLine((line) => lines.push(JSON.parse(line) as (typeof lines)[number]));
afterEach(() => void lines.splice(0));

const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });

describe('a job retried through an outage', () => {
  it('logs one warning when it starts failing and one line when it works again, whatever the number of tries', () => {
    const job = retriedWork('reading the thread cursors', { component: 'realtime' });
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
    const job = retriedWork('lease sweep', { component: 'lease-sweeper' });
    job.failed(new Error('a bug'));
    job.failed(new Error('a bug'));
    job.failed(refused());
    job.failed(refused());
    expect(lines.map((line) => [line.level, line.msg])).toEqual([
      ['error', 'lease sweep failed; retrying'],
      ['warn', 'lease sweep failed: the database cannot be reached; retrying'],
    ]);
  });
});
