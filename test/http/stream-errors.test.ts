import { describe, expect, it, vi } from 'vitest';
import type { GenerationDelta } from '../../src/engine/types.js';
import { chatStream } from '../../src/http/serving/chat.js';
import { completionStream } from '../../src/http/serving/completion.js';
import { generateStream } from '../../src/http/serving/generate.js';

// Pure framing checks: what a stream looks like when the delta source fails half way.
async function* failsAfterOneDelta(): AsyncGenerator<GenerationDelta> {
  yield { index: 0, tokenIds: [5], logprobs: [-0.1], text: 'Hi', finishReason: null, stopReason: null };
  throw new Error('session.run failed');
}

async function collect(payloads: AsyncIterable<string>): Promise<string[]> {
  const out: string[] = [];
  for await (const payload of payloads) out.push(payload);
  return out;
}

const usage = { includeUsage: true, continuousUsage: false };
const internalInfo = { message: 'Internal server error: session.run failed', type: 'InternalServerError', param: null, code: 500 };
const internalError = { object: 'error', ...internalInfo, error: internalInfo };

describe('an engine failure after the stream started', () => {
  const quiet = () => vi.spyOn(console, 'error').mockImplementation(() => {});

  it('/v1/completions: the chunks so far, an {"error": ...} event, then [DONE]', async () => {
    const logged = quiet();
    const payloads = await collect(completionStream(failsAfterOneDelta(), { id: 'cmpl-1', model: 'm', promptTokenCount: 3, usage }));
    logged.mockRestore();
    expect(payloads).toHaveLength(3);
    expect(JSON.parse(payloads[0]!).choices[0].text).toBe('Hi');
    expect(JSON.parse(payloads[1]!)).toEqual(internalError);
    expect(payloads[2]).toBe('[DONE]');
  });

  it('/v1/chat/completions: role chunk, content, error event, [DONE] (no usage chunk)', async () => {
    const logged = quiet();
    const payloads = await collect(chatStream(failsAfterOneDelta(), { id: 'c', model: 'm', promptTokenCount: 3, role: 'assistant', usage }));
    logged.mockRestore();
    expect(payloads).toHaveLength(4);
    expect(JSON.parse(payloads[0]!).choices[0].delta).toEqual({ role: 'assistant', content: '' });
    expect(JSON.parse(payloads[1]!).choices[0].delta).toEqual({ content: 'Hi' });
    expect(JSON.parse(payloads[2]!)).toEqual(internalError);
    expect(payloads[3]).toBe('[DONE]');
  });

  it('/generate: the text so far, then the error event, then the end', async () => {
    const logged = quiet();
    const payloads = await collect(generateStream(failsAfterOneDelta(), { fullText: false }));
    logged.mockRestore();
    expect(payloads).toEqual(['{"text":["Hi"]}', JSON.stringify(internalError)]);
  });
});
