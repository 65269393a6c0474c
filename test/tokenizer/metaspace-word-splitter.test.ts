import { describe, expect, it } from 'vitest';
import { Tokenizer as HfTokenizersJs } from '@huggingface/tokenizers';
import { isSplitBeforeMetaspaceExact, MetaspaceWordSplitter } from '../../src/tokenizer/metaspace-word-splitter.js';
import { HfTokenizer } from '../../src/tokenizer/hf-tokenizer.js';
import { storiesReferenceVocab, storiesTokenizerFiles } from './helpers/stories-tokenizer.js';
import { randomTexts } from './helpers/random-text.js';

const { tokenizerJson, tokenizerConfig } = storiesTokenizerFiles();
type Json = { pre_tokenizer: unknown; model: { merges: string[]; [key: string]: unknown } };
const json = tokenizerJson as Json;

function variant(change: (copy: Json) => void): Json {
  const copy = JSON.parse(JSON.stringify(json)) as Json;
  change(copy);
  return copy;
}

describe('the word-split fast path', () => {
  it('splits before every "▁" that follows another character, keeping "▁" runs together', () => {
    const splitter = new MetaspaceWordSplitter();
    expect(splitter.pre_tokenize_text('▁Once▁upon▁▁a▁time')).toEqual(['▁Once', '▁upon', '▁▁a', '▁time']);
    expect(splitter.pre_tokenize_text('▁▁▁x▁')).toEqual(['▁▁▁x', '▁']);
    expect(splitter.pre_tokenize_text('no-space')).toEqual(['no-space']);
  });

  it('applies to the converted llama2.c tokenizer, whose merges never join a word end to a "▁"', () => {
    expect(isSplitBeforeMetaspaceExact(json)).toBe(true);
  });

  it('is refused when a merge crosses a word start, or the tokenizer has its own pre-tokenizer', () => {
    expect(isSplitBeforeMetaspaceExact(variant((copy) => copy.model.merges.push('e \u2581t')))).toBe(false);
    expect(isSplitBeforeMetaspaceExact(variant((copy) => copy.model.merges.push(['a', '\u2581b'] as never)))).toBe(false);
    expect(
      isSplitBeforeMetaspaceExact(variant((copy) => (copy.pre_tokenizer = { type: 'Metaspace', replacement: '\u2581' }))),
    ).toBe(false);
    expect(isSplitBeforeMetaspaceExact(variant((copy) => (copy.model.ignore_merges = true)))).toBe(false);
  });

  it('gives the same ids as the unsplit text on random strings', () => {
    const plain = new HfTokenizersJs(tokenizerJson, tokenizerConfig);
    const fast = HfTokenizer.fromJson(tokenizerJson, tokenizerConfig);
    const texts = randomTexts(300, 3, storiesReferenceVocab().pieces.slice(259), 40);
    const differing = texts.filter((text) => JSON.stringify(plain.encode(text).ids) !== JSON.stringify(fast.encode(text)));
    expect(differing).toEqual([]);
  });

  it('is not used when a merge would cross a word start, so such merges still apply', () => {
    // "e▁" is not a piece, so add one: with a crossing merge the whole text is one word.
    const crossing = variant((copy) => {
      (copy.model.vocab as Record<string, number>)['e\u2581t'] = 512;
      copy.model.merges.unshift('e \u2581t');
    });
    const tokenizer = HfTokenizer.fromJson(crossing, tokenizerConfig);
    expect(tokenizer.encode('the tree', { addSpecialTokens: false })).toContain(512);
  });
});
