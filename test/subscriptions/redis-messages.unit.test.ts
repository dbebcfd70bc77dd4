// What one publish puts on Redis: the changes one command or batch committed, in commit order,
// each with its row (so other instances deliver it as committed), in messages of about
// MESSAGE_BYTES; only a change over MAX_CHANGE_BYTES goes as a bare wake-up.
import { describe, expect, it } from 'vitest';
import type { CommittedChange } from '../../src/domain/events.js';
import { decodeMessage, encodeMessages, MAX_CHANGE_BYTES, MESSAGE_BYTES } from '../../src/realtime/redis-bus.js';

const threadId = '00000000-0000-4000-8000-000000000001';
const change = (cursor: number, outputBytes: number): CommittedChange =>
  ({
    kind: 'audit',
    threadId,
    cursor: BigInt(cursor),
    committedAt: new Date(0),
    row: { id: `a${cursor}`, threadId, changeCursor: BigInt(cursor), changedAt: new Date(0), output: { content: 'x'.repeat(outputBytes) } },
  }) as unknown as CommittedChange;

describe('Redis messages of one publish', () => {
  it('carry every change with its row, in commit order, in messages of about MESSAGE_BYTES', () => {
    const changes = Array.from({ length: 50 }, (_, i) => change(i + 1, 100_000));
    const messages = encodeMessages('origin', threadId, changes);
    expect(messages.length).toBeGreaterThan(1);
    for (const { text } of messages) expect(Buffer.byteLength(text)).toBeLessThan(MESSAGE_BYTES + 1024);
    const decoded = messages.map(({ text }) => decodeMessage(threadId, text)!);
    expect(decoded.map((message) => message.cursor)).toEqual(messages.map(({ cursor }) => cursor));
    expect(decoded.flatMap((message) => message.changes!.map((c) => c.cursor))).toEqual(changes.map((c) => c.cursor));
    expect(decoded[0]!.changes![0]!.row).toMatchObject({ output: { content: 'x'.repeat(100_000) } });
  });

  it('send a change larger than MAX_CHANGE_BYTES as a bare wake-up, between the others', () => {
    const messages = encodeMessages('origin', threadId, [change(1, 10), change(2, MAX_CHANGE_BYTES), change(3, 10)]);
    const decoded = messages.map(({ text }) => decodeMessage(threadId, text)!);
    expect(decoded.map((message) => [message.cursor, message.changes?.length ?? null])).toEqual([
      [1n, 1],
      [2n, null],
      [3n, 1],
    ]);
  });
});
