import { describe, expect, it } from 'vitest';
import { IncrementalDetokenizer } from '../../src/tokenizer/detokenizer.js';
import type { Tokenizer } from '../../src/tokenizer/types.js';
import { storiesTokenizer } from './helpers/stories-tokenizer.js';
import { readGolden } from './helpers/paths.js';

const tokenizer = storiesTokenizer();
const golden = readGolden();

function stream(ids: readonly number[], options: { skipSpecialTokens: boolean; promptTokenIds?: readonly number[] }, via: Pick<Tokenizer, 'decode'> = tokenizer) {
  const detokenizer = new IncrementalDetokenizer(via, options);
  const pieces = ids.map((id) => detokenizer.push(id));
  pieces.push(detokenizer.flush());
  return { pieces, text: pieces.join(''), detokenizer };
}

/** What the output adds to the prompt when both are decoded together. */
function textAfterPrompt(prompt: readonly number[], output: readonly number[], skipSpecialTokens = true): string {
  const whole = tokenizer.decode([...prompt, ...output], { skipSpecialTokens });
  const before = tokenizer.decode(prompt, { skipSpecialTokens });
  expect(whole.startsWith(before)).toBe(true);
  return whole.slice(before.length);
}

describe('IncrementalDetokenizer', () => {
  it('streams the golden completion after its prompt into exactly the golden text', () => {
    const { pieces, text, detokenizer } = stream(golden.completion_ids, { skipSpecialTokens: true, promptTokenIds: golden.prompt_ids });
    expect(text).toBe(golden.completion_text);
    expect(detokenizer.text).toBe(golden.completion_text);
    expect(pieces.some((piece) => piece.includes('\uFFFD'))).toBe(false);
    // Every ordinary token is final at once: the stream never lags behind.
    expect(pieces.slice(0, -1).every((piece) => piece.length > 0)).toBe(true);
  });

  it('without a prompt equals decode(output ids)', () => {
    expect(stream(golden.completion_ids, { skipSpecialTokens: true }).text).toBe(tokenizer.decode(golden.completion_ids));
    const story = tokenizer.encode('Once upon a time there was a dog.', { addSpecialTokens: false });
    expect(stream(story, { skipSpecialTokens: true }).text).toBe('Once upon a time there was a dog.');
  });

  it('keeps the leading space of the first token after a prompt', () => {
    const prompt = tokenizer.encode('Once upon a');
    const output = tokenizer.encode(' time', { addSpecialTokens: false }).slice(1); // ["▁time"]
    expect(output).toEqual([378]);
    expect(stream(output, { skipSpecialTokens: true, promptTokenIds: prompt }).text).toBe(' time');
    // After a BOS-only prompt the first token is the start of the text, as in llama2.c.
    expect(stream(output, { skipSpecialTokens: true, promptTokenIds: [1] }).text).toBe('time');
  });

  it.each([
    ['emoji', 'I saw 😀 and 🐶🐱 today.'],
    ['CJK', '日本語のテキスト 中文 한국어'],
    ['flags and ZWJ sequences', 'a 🇯🇵 b 👩‍👩‍👧 c'],
    ['mixed', 'Lily said, “café?” — 日本 😀\nThe end.'],
  ])('streams %s byte-fallback text one token at a time without broken characters', (_, text) => {
    const prompt = tokenizer.encode('Once upon a time');
    const output = tokenizer.encode(text, { addSpecialTokens: false });
    expect(output.some((id) => id >= 3 && id <= 258)).toBe(true);
    const { pieces } = stream(output, { skipSpecialTokens: true, promptTokenIds: prompt });
    expect(pieces.join('')).toBe(textAfterPrompt(prompt, output));
    expect(pieces.join('')).toBe(' ' + text);
    for (const piece of pieces) {
      expect(piece).not.toContain('\uFFFD');
      // A piece never ends between the two halves of a surrogate pair.
      expect(/[\ud800-\udbff]$/.test(piece)).toBe(false);
    }
    // The first three bytes of 😀 (F0 9F 98) emit nothing; the fourth emits the character.
    if (text.includes('😀')) {
      const at = output.indexOf(0xf0 + 3);
      expect(pieces.slice(at, at + 3)).toEqual(['', '', '']);
      expect(pieces[at + 3].endsWith('😀')).toBe(true);
    }
  });

  it('emits U+FFFD only for ids that really are invalid UTF-8', () => {
    const [f0, x9f, xff] = [0xf0 + 3, 0x9f + 3, 0xff + 3];
    const cat = tokenizer.encode('cat', { addSpecialTokens: false });
    const truncated = stream([...cat, f0, x9f], { skipSpecialTokens: true });
    expect(truncated.text).toBe(tokenizer.decode([...cat, f0, x9f]));
    expect(truncated.pieces.at(-1)).toMatch(/^\uFFFD+$/); // only flush gives up on the sequence
    const interrupted = [xff, ...cat];
    expect(stream(interrupted, { skipSpecialTokens: true }).text).toBe(tokenizer.decode(interrupted));
    expect(stream(interrupted, { skipSpecialTokens: true }).text).toContain('\uFFFD');
  });

  it('keeps or drops special tokens as asked', () => {
    const output = [...tokenizer.encode('The end.', { addSpecialTokens: false }), 2];
    const prompt = tokenizer.encode('Once upon a time');
    expect(stream(output, { skipSpecialTokens: true, promptTokenIds: prompt }).text).toBe(' The end.');
    expect(stream(output, { skipSpecialTokens: false, promptTokenIds: prompt }).text).toBe(' The end.</s>');
    expect(stream(output, { skipSpecialTokens: false, promptTokenIds: prompt }).text).toBe(textAfterPrompt(prompt, output, false));
  });

  it('matches whole decoding on random token sequences, including invalid byte runs and specials', () => {
    let seed = 12345;
    const next = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    for (let trial = 0; trial < 200; trial++) {
      const prompt = tokenizer.encode('Once upon a time');
      const output = Array.from({ length: 1 + Math.floor(next() * 30) }, () => Math.floor(next() * 512));
      for (const skipSpecialTokens of [true, false]) {
        expect(stream(output, { skipSpecialTokens, promptTokenIds: prompt }).text).toBe(textAfterPrompt(prompt, output, skipSpecialTokens));
        expect(stream(output, { skipSpecialTokens }).text).toBe(tokenizer.decode(output, { skipSpecialTokens }));
      }
    }
  });

  it('decodes a small window per token, not the whole text', () => {
    const windows: number[] = [];
    const spy: Pick<Tokenizer, 'decode'> = {
      decode: (ids, options) => {
        windows.push(ids.length);
        return tokenizer.decode(ids, options);
      },
    };
    const long = Array.from({ length: 40 }, () => golden.completion_ids).flat();
    const { text } = stream(long, { skipSpecialTokens: true, promptTokenIds: golden.prompt_ids }, spy);
    expect(text).toBe(tokenizer.decode([...golden.prompt_ids, ...long]).slice('Once upon a time'.length));
    expect(Math.max(...windows)).toBeLessThanOrEqual(8);
  });
});
