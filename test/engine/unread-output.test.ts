import { describe, expect, it } from 'vitest';
import { DeltaQueue } from '../../src/engine/delta-queue.js';
import { EngineOutputUnreadError } from '../../src/engine/errors.js';
import type { GenerationDelta } from '../../src/engine/types.js';
import { deltaBytes, UnreadOutputBudget } from '../../src/engine/unread-output.js';

const delta = (text: string): GenerationDelta => ({ index: 0, tokenIds: [1], logprobs: [0], text, finishReason: null, stopReason: null });

async function drain(queue: DeltaQueue<GenerationDelta>): Promise<{ texts: string[]; error: unknown }> {
  const texts: string[] = [];
  try {
    for await (const item of queue) texts.push(item.text);
  } catch (error) {
    return { texts, error };
  }
  return { texts, error: null };
}

describe('UnreadOutputBudget', () => {
  const size = deltaBytes(delta('x'));

  it('overflows a stream past its share: its unread deltas dropped, its consumer gets the error, its generation stopped', async () => {
    const budget = new UnreadOutputBudget({ maxStreamUnreadBytes: 3 * size, maxUnreadBytesTotal: 100 * size });
    const queue = new DeltaQueue<GenerationDelta>();
    let stopped = 0;
    budget.track(queue, () => stopped++);
    for (let i = 0; i < 3; i++) queue.push(delta('x'));
    expect(budget.unreadBytes).toBe(3 * size);
    expect(stopped).toBe(0);
    queue.push(delta('x'));
    expect(stopped).toBe(1);
    expect(budget.unreadBytes).toBe(0);
    queue.push(delta('late')); // the aborted generation's last deltas go nowhere
    const { texts, error } = await drain(queue);
    expect(texts).toEqual([]);
    expect(error).toBeInstanceOf(EngineOutputUnreadError);
    expect((error as Error).message).toContain('maxStreamUnreadBytes');
  });

  it('past the server total, ends the stream holding most, not the one that pushed last', async () => {
    const budget = new UnreadOutputBudget({ maxStreamUnreadBytes: 100 * size, maxUnreadBytesTotal: 5 * size });
    const slow = new DeltaQueue<GenerationDelta>();
    const reader = new DeltaQueue<GenerationDelta>();
    const stopped: string[] = [];
    budget.track(slow, () => stopped.push('slow'));
    budget.track(reader, () => stopped.push('reader'));
    for (let i = 0; i < 4; i++) slow.push(delta('x'));
    reader.push(delta('x'));
    expect(stopped).toEqual([]);
    reader.push(delta('x'));
    expect(stopped).toEqual(['slow']);
    expect(budget.unreadBytes).toBe(2 * size);
    reader.close();
    expect((await drain(reader)).texts).toEqual(['x', 'x']);
    expect(budget.unreadBytes).toBe(0);
  });

  it('releases what a consumer that left did not read', () => {
    const budget = new UnreadOutputBudget({ maxStreamUnreadBytes: 100 * size, maxUnreadBytesTotal: 100 * size });
    const queue = new DeltaQueue<GenerationDelta>();
    const release = budget.track(queue, () => {});
    queue.push(delta('x'));
    queue.push(delta('x'));
    release();
    expect(budget.unreadBytes).toBe(0);
  });
});
