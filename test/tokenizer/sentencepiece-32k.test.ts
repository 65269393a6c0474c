import { describe, expect, it } from 'vitest';
import { Tokenizer as HfTokenizersJs } from '@huggingface/tokenizers';
import { convertLlama2cTokenizer } from '../../src/convert/llama2c-tokenizer.js';
import { HfTokenizer } from '../../src/tokenizer/hf-tokenizer.js';
import { readSentencepiece32kEncodings, readSentencepiece32kModel } from './helpers/paths.js';
import { readReferenceVocab, referenceEncode } from './helpers/reference-llama2c-encoder.js';
import { readSentencepiecePieces, toLlama2cTokenizerBin } from './helpers/sentencepiece-model.js';
import { randomTexts } from './helpers/random-text.js';

// A 32,000-piece SentencePiece BPE vocabulary of Llama 2's shape (trained by
// scripts/tokenizer/build_sentencepiece_32k.py), in llama2.c layout: many more merges (and
// several splits per piece) than tok512, so rank ties and speed get a real test.
const bin = toLlama2cTokenizerBin(readSentencepiecePieces(readSentencepiece32kModel()));
const { tokenizerJson, tokenizerConfig } = convertLlama2cTokenizer(bin);
const tokenizer = HfTokenizer.fromJson(tokenizerJson, tokenizerConfig);
const reference = readReferenceVocab(bin);

describe('converted 32k sentencepiece vocabulary', () => {
  it('gives the ids the sentencepiece library gives, on 311 texts (prose, code, digits, whitespace runs, non-ASCII)', () => {
    expect(tokenizer.vocabSize).toBe(32000);
    const encodings = readSentencepiece32kEncodings();
    expect(encodings[0]).toEqual({ text: 'Once upon a time', ids: [1, 7853, 4852, 272, 806] });
    const differing = encodings.filter(({ text, ids }) => JSON.stringify(tokenizer.encode(text)) !== JSON.stringify(ids));
    expect(differing).toEqual([]);
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
