import { expect } from 'vitest';
import { ToolCallStream, readMessage, type MessageDelta, type OutputReader } from '../../src/tools/tool-call-stream.js';

export interface Collected {
  content: string;
  calls: Array<{ id: string; name: string; arguments: string }>;
  deltas: MessageDelta[];
}

/** Streams `pieces` through a ToolCallStream (the last one final) and adds the deltas up as a client does. */
export function streamPieces(reader: OutputReader, pieces: readonly string[]): Collected {
  let next = 0;
  const stream = new ToolCallStream(reader, () => `call-${next++}`);
  const collected: Collected = { content: '', calls: [], deltas: [] };
  pieces.forEach((piece, i) => {
    const delta = stream.push(piece, i === pieces.length - 1);
    collected.deltas.push(delta);
    if (delta.content !== undefined) collected.content += delta.content;
    for (const call of delta.toolCalls ?? []) {
      if (call.id !== undefined) {
        // A call's first entry: its index is the next one, and it names the function.
        expect(call.index).toBe(collected.calls.length);
        expect(call.type).toBe('function');
        expect(call.function.name).toBeTruthy();
        collected.calls.push({ id: call.id, name: call.function.name!, arguments: call.function.arguments ?? '' });
      } else {
        expect(call.function.name).toBeUndefined();
        collected.calls[call.index]!.arguments += call.function.arguments ?? '';
      }
    }
  });
  return collected;
}

/** Splits text into pieces of 1..4 characters, deterministically (a stand-in for tokens). */
export function tokenLike(text: string, seed = 1): string[] {
  const pieces: string[] = [];
  let state = seed;
  for (let at = 0; at < text.length; ) {
    state = (state * 1103515245 + 12345) % 2147483648;
    const length = 1 + (state % 4);
    pieces.push(text.slice(at, at + length));
    at += length;
  }
  return pieces;
}

/** The whole-output message, and the same from every streamed split: one character at a time and token-like. */
export function expectSameStreamed(reader: OutputReader, text: string): { content: string | null; calls: Array<{ name: string; arguments: string }> } {
  const whole = readMessage(reader, text, () => 'id');
  const calls = whole.toolCalls.map((call) => ({ name: call.function.name, arguments: call.function.arguments }));
  for (const pieces of [[...text], tokenLike(text, 1), tokenLike(text, 7), [text]]) {
    const streamed = streamPieces(reader, pieces);
    expect(streamed.calls.map(({ name, arguments: args }) => ({ name, arguments: args }))).toEqual(calls);
    expect(streamed.content).toBe(whole.content ?? '');
  }
  return { content: whole.content, calls };
}
