import { describe, expect, it } from 'vitest';
import { outputMessage, ResponseStore, type StoredResponse } from '../../src/http/responses/store.js';
import type { ResponseObject } from '../../src/http/responses/serving-responses.js';

const stored = (id: string, text = 'hi'): StoredResponse => ({
  response: {
    id,
    output: [{ id: 'msg_1', type: 'message', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text, annotations: [], logprobs: [] }] }],
  } as unknown as ResponseObject,
  messages: [{ role: 'user', content: text }],
});

describe('the stored responses (previous_response_id)', () => {
  it('keeps at most maxEntries, dropping the least recently used', () => {
    const store = new ResponseStore(2, 1_000_000);
    store.put(stored('a'));
    store.put(stored('b'));
    expect(store.get('a')).toBeDefined(); // a is now the most recently used
    store.put(stored('c'));
    expect(store.get('b')).toBeUndefined();
    expect(store.get('a')).toBeDefined();
    expect(store.get('c')).toBeDefined();
    expect(store.size).toBe(2);
  });

  it('keeps at most maxChars of JSON in all, and never one response larger than that', () => {
    const size = JSON.stringify(stored('a', 'x'.repeat(100))).length;
    const store = new ResponseStore(100, size * 2 + 10);
    store.put(stored('a', 'x'.repeat(100)));
    store.put(stored('b', 'x'.repeat(100)));
    store.put(stored('c', 'x'.repeat(100)));
    expect([store.get('a'), store.get('b') !== undefined, store.get('c') !== undefined]).toEqual([undefined, true, true]);
    store.put(stored('huge', 'x'.repeat(size * 3)));
    expect(store.get('huge')).toBeUndefined();
    expect(store.size).toBe(2);
  });

  it('turns an output into the assistant turn that continues the conversation', () => {
    const response = {
      output: [
        { type: 'message', content: [{ type: 'output_text', text: 'Let me see.' }] },
        { type: 'function_call', call_id: 'call_1', name: 'look', arguments: '{"at":1}' },
      ],
    } as unknown as ResponseObject;
    expect(outputMessage(response)).toEqual({
      role: 'assistant',
      content: 'Let me see.',
      tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'look', arguments: '{"at":1}' } }],
    });
    expect(outputMessage({ output: [] } as unknown as ResponseObject)).toBeNull();
  });
});
