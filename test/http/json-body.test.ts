import { describe, expect, it } from 'vitest';
import { CHUNK_CHARS, jsonChunks, jsonResponse } from '../../src/http/json-body.js';

async function collect(value: unknown): Promise<{ text: string; chunks: number }> {
  let text = '';
  let chunks = 0;
  for await (const chunk of jsonChunks(value)) {
    text += chunk;
    chunks++;
  }
  return { text, chunks };
}

describe('chunked JSON bodies', () => {
  const values: [string, unknown][] = [
    ['a small object', { a: 1, b: 'x', c: [1, 2, null], d: undefined, e: { f: true } }],
    ['arrays with holes of undefined', [1, undefined, { x: undefined, y: [undefined] }]],
    ['strings needing escapes', { '"k"': 'line\nbreak \u2028 \ud800 "q"', n: -0.5e-7 }],
    ['200 K token ids', { tokens: Array.from({ length: 200_000 }, (_, i) => i), count: 200_000 }],
    ['a logprobs-shaped response', { choices: Array.from({ length: 8 }, (_, i) => ({ index: i, logprobs: { tokens: Array(2000).fill('▁a'), top_logprobs: Array.from({ length: 2000 }, () => ({ a: -1.5, b: -2.25 })) } })) }],
    ['primitives at the top', 'text'],
  ];
  it.each(values)('%s: exactly JSON.stringify', async (_name, value) => {
    const { text, chunks } = await collect(value);
    expect(text).toBe(JSON.stringify(value));
    expect(chunks).toBeGreaterThanOrEqual(Math.floor(text.length / (CHUNK_CHARS * 4)));
  });

  it('a large body is written in many chunks, the event loop running between them', async () => {
    const value = { tokens: Array.from({ length: 1_000_000 }, (_, i) => i) };
    let ticks = 0;
    const timer = setInterval(() => ticks++, 0);
    const response = jsonResponse(value);
    const text = await response.text();
    clearInterval(timer);
    expect(text).toBe(JSON.stringify(value));
    expect(ticks).toBeGreaterThan(10);
    expect(response.headers.get('content-type')).toBe('application/json');
  });
});
