import { describe, expect, it } from 'vitest';
import { Tokenizer as HfTokenizersJs } from '@huggingface/tokenizers';
import { convertLlama2cTokenizer } from '../../scripts/convert/llama2c-tokenizer.js';
import { HfTokenizer } from '../../src/tokenizer/hf-tokenizer.js';
import { readLlama2SentencepieceModel } from './helpers/paths.js';
import { readReferenceVocab, referenceEncode } from './helpers/reference-llama2c-encoder.js';
import { readSentencepiecePieces, toLlama2cTokenizerBin } from './helpers/sentencepiece-model.js';
import { randomTexts } from './helpers/random-text.js';

// The real 32,000-piece Llama 2 vocabulary, in llama2.c layout: many more merges (and
// several splits per piece) than tok512, so rank ties and speed get a real test.
const bin = toLlama2cTokenizerBin(readSentencepiecePieces(readLlama2SentencepieceModel()));
const { tokenizerJson, tokenizerConfig } = convertLlama2cTokenizer(bin);
const tokenizer = HfTokenizer.fromJson(tokenizerJson, tokenizerConfig);
const reference = readReferenceVocab(bin);

describe('converted Llama 2 vocabulary', () => {
  it('encodes "Once upon a time" with the well-known Llama 2 ids', () => {
    // Llama 2: ▁Once 9038, ▁upon 2501, ▁a 263, ▁time 931.
    expect(tokenizer.encode('Once upon a time')).toEqual([1, 9038, 2501, 263, 931]);
    expect(tokenizer.vocabSize).toBe(32000);
  });

  it('matches the llama2.c reference encoder on 300 random strings', () => {
    const pieces = reference.pieces.slice(259, 8000);
    const mismatches = randomTexts(300, 99, pieces, 16)
      .map((text) => ({ text, ours: tokenizer.encode(text), expected: referenceEncode(reference, text) }))
      .filter(({ ours, expected }) => JSON.stringify(ours) !== JSON.stringify(expected));
    expect(mismatches).toEqual([]);
  });

  it('handles pieces named like Object.prototype members (toString, constructor, __proto__)', () => {
    for (const text of ['UDtoString', 'x.toString()', 'constructorE', 'a __proto__ b', 'hasOwnProperty valueOf']) {
      expect(tokenizer.encode(text)).toEqual(referenceEncode(reference, text));
    }
  });

  it('gives the same ids as @huggingface/tokenizers on the unsplit text (the word-split fast path is exact)', () => {
    const plain = new HfTokenizersJs(tokenizerJson, tokenizerConfig);
    const texts = randomTexts(200, 5, reference.pieces.slice(259, 8000), 40);
    const differing = texts.filter((text) => JSON.stringify(plain.encode(text).ids) !== JSON.stringify(tokenizer.encode(text)));
    expect(differing).toEqual([]);
  });

  it('encodes 100 KB of prose in well under a second', () => {
    const prose = 'Once upon a time, there was a little girl named Lily. She loved 日本 and 😀.\n';
    const text = prose.repeat(Math.ceil(100_000 / prose.length)).slice(0, 100_000);
    const started = performance.now();
    const ids = tokenizer.encode(text);
    const elapsed = performance.now() - started;
    expect(tokenizer.decode(ids)).toBe(text);
    expect(elapsed).toBeLessThan(1000);
  });
});
