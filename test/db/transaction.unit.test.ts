import { describe, expect, it } from 'vitest';
import type { SqlTransactor } from '../../src/db/database.js';
import { inTransaction } from '../../src/db/transaction.js';

/** A transactor whose every transaction fails with `error`; counts the attempts. */
function failingWith(error: Error) {
  const driver = {
    attempts: 0,
    transaction: async () => {
      driver.attempts++;
      throw error;
    },
  };
  return driver satisfies SqlTransactor;
}

const withCode = (message: string, code: string) => Object.assign(new Error(message), { code });

describe('inTransaction retries', () => {
  it.each([
    ['40001 (serialization failure)', '40001'],
    ['40P01 (deadlock detected)', '40P01'],
  ])('a transaction failing with SQLSTATE %s is run again, a bounded number of times', async (_what, code) => {
    const driver = failingWith(withCode('could not serialize access', code));
    await expect(inTransaction(driver, async () => 1)).rejects.toMatchObject({ code });
    expect(driver.attempts).toBe(5);
  });

  it.each([
    ['an error whose message merely names 40001', new Error('Tool call call-40001 never started')],
    ['an error whose message merely says "deadlock detected"', new Error('tool deadlock detected in the sandbox')],
    ['an error with another SQLSTATE that mentions 40P01', withCode('value "40P01" violates a constraint', '23505')],
  ])('%s runs once', async (_what, error) => {
    const driver = failingWith(error);
    await expect(inTransaction(driver, async () => 1)).rejects.toBe(error);
    expect(driver.attempts).toBe(1);
  });
});
