/**
 * The length-only lower bound on token counts (src/tokenizer/token-lower-bound.ts) is never
 * above what the real tokenizer (@huggingface/tokenizers) makes of a text, on the embedded
 * model's sentencepiece-style vocabulary and the byte-level ones of the fixtures, for texts
 * built to be as few tokens as possible (the vocabulary's longest tokens, repeated) and
 * for hostile ones (one long word, CJK, spaces, added tokens spelt out).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { HfTokenizer } from '../../src/tokenizer/hf-tokenizer.js';
import { minTokenCount, tokenLowerBoundOf } from '../../src/tokenizer/token-lower-bound.js';
import { randomTexts } from './helpers/random-text.js';

const DIRS = ['models/stories260k', 'test/fixtures/multimodal/smolvlm', 'test/fixtures/multimodal/llava', 'test/fixtures/multimodal/qwen2-audio'];

function load(dir: string): { json: Record<string, unknown>; tokenizer: HfTokenizer } {
  const json = JSON.parse(readFileSync(`${dir}/tokenizer.json`, 'utf8'));
  const config = JSON.parse(readFileSync(`${dir}/tokenizer_config.json`, 'utf8'));
  return { json, tokenizer: HfTokenizer.fromJson(json, config) };
}

/** The vocabulary's longest tokens as text (decoded), the best case for few tokens. */
function longestTokenTexts(tokenizer: HfTokenizer, json: Record<string, unknown>): string[] {
  const vocab = (json.model as { vocab: Record<string, number> }).vocab;
  const ids = Object.entries(vocab).sort((a, b) => b[0].length - a[0].length).slice(0, 5).map(([, id]) => id);
  return ids.map((id) => tokenizer.decode([id], { skipSpecialTokens: false }));
}

describe.each(DIRS)('the token lower bound of %s', (dir) => {
  const { json, tokenizer } = load(dir);
  const bound = tokenLowerBoundOf(json);

  it('is known for this tokenizer', () => {
    expect(bound).not.toBeNull();
  });

  it('never exceeds the real token count', () => {
    const added = ((json.added_tokens as { content: string }[]) ?? []).map((token) => token.content);
    const texts = [
      ...longestTokenTexts(tokenizer, json).map((text) => text.repeat(200)),
      'a'.repeat(5000),
      '漢字'.repeat(1500),
      ' '.repeat(3000),
      '😀'.repeat(800),
      added.join('').repeat(50),
      `${added.join(' ')} Once upon a time`.repeat(20),
      'Lily and Tom went to the park. They played. '.repeat(100),
    ];
    for (const text of texts) {
      const actual = tokenizer.encode(text, { addSpecialTokens: false }).length;
      const lower = minTokenCount(bound, text);
      expect(lower, JSON.stringify(text.slice(0, 30))).toBeLessThanOrEqual(actual);
      expect(lower).toBeGreaterThan(0);
      // Past `enough` the quick answer is still a lower bound.
      expect(minTokenCount(bound, text, 1)).toBeLessThanOrEqual(actual);
    }
  });
});

describe.each(DIRS)('the token lower bound of %s, counting words', (dir) => {
  const { json, tokenizer } = load(dir);
  const vocab = Object.keys((json.model as { vocab: Record<string, number> }).vocab).slice(0, 400);

  it('never exceeds the real token count, and prose counts a token a word', () => {
    const added = ((json.added_tokens as { content: string }[]) ?? []).map((token) => token.content);
    const longest = longestTokenTexts(tokenizer, json);
    const texts = [
      ...longest.map((text) => `${text} `.repeat(200)),
      longest.join(' ').repeat(50),
      `${added.join(' ')} Once upon a time `.repeat(20),
      'Lily and Tom went to the park. They played. '.repeat(100),
      'a  b   c\td\ne . , ! ? 1 22 333 '.repeat(200),
      ' . \n . \r\n .  ;  \u00a0 x \u3000 y '.repeat(200),
      '漢字 日本 😀 é '.repeat(300),
      ...randomTexts(300, 11, vocab, 40),
      ...randomTexts(100, 12, vocab, 40).map((text) => text.split('').join(' ')),
    ];
    for (const text of texts) {
      const actual = tokenizer.encode(text, { addSpecialTokens: false }).length;
      expect(tokenizer.minTokenCount(text, Infinity, { words: true }), JSON.stringify(text.slice(0, 40))).toBeLessThanOrEqual(actual);
      expect(tokenizer.minTokenCount(text, 1, { words: true })).toBeLessThanOrEqual(actual);
    }
    const prose = 'Lily and Tom went to the park. They played. '.repeat(1000);
    expect(tokenizer.minTokenCount(prose, Infinity, { words: true })).toBe(9000);
    expect(tokenizer.minTokenCount(prose)).toBeLessThan(9000);
  });
});

describe('tokenizers without a sound bound get none', () => {
  const base = load('models/stories260k').json;
  it.each([
    ['a normalizer that strips accents', { ...base, normalizer: { type: 'StripAccents' } }],
    ['a whitespace-removing pre-tokenizer', { ...base, pre_tokenizer: { type: 'Whitespace' } }],
    ['a BPE folding unknown characters into one token', { ...base, model: { ...(base.model as object), byte_fallback: false, fuse_unk: true } }],
    ['a WordPiece model', { ...base, model: { type: 'WordPiece', vocab: {} } }],
    ['a Replace to nothing', { ...base, normalizer: { type: 'Replace', pattern: { String: 'a' }, content: '' } }],
  ])('%s', (_name, json) => {
    expect(tokenLowerBoundOf(json as Record<string, unknown>)).toBeNull();
  });

  it('NFC divides the bound by 4 (at most 4 code points compose into one)', () => {
    const plain = tokenLowerBoundOf(base)!;
    const nfc = tokenLowerBoundOf({ ...base, normalizer: { type: 'Sequence', normalizers: [{ type: 'NFC' }, ...(base.normalizer as { normalizers: unknown[] }).normalizers] } })!;
    expect(nfc.unitsPerToken).toBe(plain.unitsPerToken * 4);
  });
});

describe('words count only where each word is surely a token of its own', () => {
  const sentencepiece = load('models/stories260k').json;
  const byteLevel = load('test/fixtures/multimodal/smolvlm').json;
  const gpt2Split = (behavior: string) => ({
    type: 'Sequence',
    pretokenizers: [
      { type: 'Split', pattern: { Regex: "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+" }, behavior, invert: false },
      { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false },
    ],
  });

  it('the fixtures: sentencepiece split at spaces (MetaspaceWordSplitter), byte-level GPT-2 regexes', () => {
    expect(tokenLowerBoundOf(sentencepiece, true)!.words).toBe(true);
    expect(tokenLowerBoundOf(byteLevel)!.words).toBe(true);
    expect(tokenLowerBoundOf({ ...byteLevel, pre_tokenizer: gpt2Split('Isolated') })!.words).toBe(true);
  });

  it.each([
    ['sentencepiece without its word split (one piece)', sentencepiece, false],
    ['a Split that merges its matches into their neighbours', { ...byteLevel, pre_tokenizer: gpt2Split('MergedWithPrevious') }, false],
    ['a normalizer that rewrites spaces before a GPT-2 regex', { ...byteLevel, normalizer: { type: 'Replace', pattern: { String: ' ' }, content: '_' } }, false],
    ['an added token holding a space', { ...byteLevel, added_tokens: [{ id: 0, content: '<| end |>', special: true }] }, false],
    ['a model that may drop characters (no byte fallback, no unknown token)', { ...sentencepiece, model: { ...(sentencepiece.model as object), byte_fallback: false, unk_token: null } }, true],
  ])('not for %s', (_name, json, wordSplit) => {
    expect(tokenLowerBoundOf(json as Record<string, unknown>, wordSplit)?.words ?? false).toBe(false);
  });
});
