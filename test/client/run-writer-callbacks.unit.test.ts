// A runtime's onWriteError is its own code (a logger, a metrics client): one that throws must not
// break the run's write queue, so that every later write is still sent, in order, and drain()
// still settles.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { RunWriter } from '@agent-audit/client';

describe('RunWriter with an onWriteError that throws', () => {
  beforeEach(() => vi.spyOn(console, 'error').mockImplementation(() => {}));
  afterEach(() => vi.restoreAllMocks());

  it('sends the writes after a failed one, and drains', async () => {
    const writer = new RunWriter('run-1', 1_000, () => {}, () => {
      throw new Error('the metrics client is down');
    });
    const sent: string[] = [];
    await writer.submit(async () => {
      sent.push('model started');
      throw new Error('503 from a proxy');
    });
    await writer.submit(async () => void sent.push('model finished'));
    await writer.drain();
    expect(sent).toEqual(['model started', 'model finished']);
    expect(writer.failures).toHaveLength(1);
    expect(console.error).toHaveBeenCalledWith('onWriteError threw', expect.any(Error));
  });
});
