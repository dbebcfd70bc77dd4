import { describe, expect, it } from 'vitest';
import { conversationOf } from '../../web/src/conversation.js';

describe("a model call's conversation", () => {
  it('reads messages by role with their tool calls, then the answer', () => {
    expect(
      conversationOf(
        { messages: [{ role: 'system', content: 'Be brief.' }, { type: 'human', content: [{ type: 'text', text: 'Pay ' }, 'it'] }] },
        { role: 'assistant', content: '', tool_calls: [{ id: 'c1', name: 'pay', args: { amount: 120 } }, { id: 'c2', function: { name: 'mail', arguments: '{}' } }] },
      ),
    ).toEqual([
      { role: 'system', text: 'Be brief.', toolCalls: [] },
      { role: 'user', text: 'Pay it', toolCalls: [] },
      { role: 'assistant', text: '', toolCalls: [{ id: 'c1', name: 'pay', args: { amount: 120 } }, { id: 'c2', name: 'mail', args: '{}' }] },
    ]);
  });

  it('is null for inputs and outputs of other shapes', () => {
    expect(conversationOf({ prompt: 'hi' }, 'text')).toBeNull();
    expect(conversationOf(null, null)).toBeNull();
  });
});
