import { describe, expect, it } from 'vitest';
import { storiesTokenizer } from './helpers/stories-tokenizer.js';
import { readGolden } from './helpers/paths.js';

const tokenizer = storiesTokenizer();
const golden = readGolden();

describe('decode', () => {
  it('turns the golden completion ids into the golden completion text', () => {
    expect(tokenizer.decode(golden.completion_ids)).toBe(golden.completion_text);
  });

  it('drops BOS and the dummy-prefix space of the golden prompt', () => {
    expect(tokenizer.decode(golden.prompt_ids)).toBe('Once upon a time');
  });

  it('keeps special tokens when skipSpecialTokens is false, as HF Llama tokenizers print them', () => {
    expect(tokenizer.decode(golden.prompt_ids, { skipSpecialTokens: false })).toBe('<s> Once upon a time');
    const withEos = [...golden.prompt_ids, 426, 2];
    expect(tokenizer.decode(withEos, { skipSpecialTokens: false })).toBe('<s> Once upon a time.</s>');
    expect(tokenizer.decode(withEos, { skipSpecialTokens: true })).toBe('Once upon a time.');
    expect(tokenizer.decode(withEos)).toBe('Once upon a time.');
  });

  it('decodes an empty list to the empty string', () => {
    expect(tokenizer.decode([])).toBe('');
    expect(tokenizer.decode([1], { skipSpecialTokens: true })).toBe('');
  });

  it('joins byte-fallback tokens into characters, and marks invalid UTF-8 with U+FFFD', () => {
    const bytes = (...values: number[]) => values.map((value) => value + 3);
    expect(tokenizer.decode(bytes(0xf0, 0x9f, 0x98, 0x80))).toBe('😀');
    expect(tokenizer.decode([...bytes(0xe6, 0x97, 0xa5), 410, ...bytes(0xe6, 0x9c, 0xac)])).toBe('日 本');
    expect(tokenizer.decode(bytes(0xf0, 0x9f))).toMatch(/^\uFFFD+$/);
    expect(tokenizer.decode([...bytes(0xff), 437])).toBe('\uFFFDS');
  });

  it('maps ids and pieces both ways', () => {
    expect(tokenizer.idToToken(403)).toBe('\u2581Once');
    expect(tokenizer.tokenToId('\u2581Once')).toBe(403);
    expect(tokenizer.idToToken(13)).toBe('<0x0A>');
    expect(tokenizer.tokenToId('</s>')).toBe(2);
    expect(tokenizer.tokenToId('not a piece')).toBeUndefined();
    expect(tokenizer.idToToken(512)).toBeUndefined();
  });
});
