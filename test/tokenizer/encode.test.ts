import { describe, expect, it } from 'vitest';
import { storiesReferenceVocab, storiesTokenizer } from './helpers/stories-tokenizer.js';
import { referenceEncode } from './helpers/reference-llama2c-encoder.js';
import { randomTexts } from './helpers/random-text.js';
import { readGolden } from './helpers/paths.js';

const tokenizer = storiesTokenizer();
const reference = storiesReferenceVocab();
const golden = readGolden();

const HANDPICKED = [
  'Once upon a time',
  'Once upon a time, there was a little girl named Lily. She loved to play outside.',
  'The cat sat on the mat. "Hello!" said Tim; the dog barked: woof?',
  'Lily\'s mom said, "Lily, let\'s go to the park."',
  'a',
  ' ',
  '  ',
  '   leading spaces',
  'trailing spaces   ',
  'many     spaces    between    words',
  '\n',
  'line one\nline two\n\nline four\n',
  '\ttab\tseparated\t',
  'CRLF\r\nline',
  '!!!???...,,,;;;:::---',
  '(brackets) [square] {curly} <angle> a/b\\c @#$%^&*_+=|~`',
  '1234567890 3.14 -42',
  'café naïve résumé façade',
  'quotes “curly” and ’apostrophes’ — dashes – … ellipsis',
  'non\u00a0breaking and hair\u200aspace',
  '😀',
  'I like 🐶 and 🐱 very much 😀😀',
  '👩‍👩‍👧 family 🇯🇵 flag',
  '日本語のテキスト',
  '中文 한국어 Ελληνικά русский',
  'mixed 日本 text with emoji 😀 and ASCII.',
  '\u0000 control \u0007 chars \u001b[0m',
  '\ufffd replacement char',
  '\u{10ffff}',
];

describe('encode reproduces the llama2.c reference encoder', () => {
  it('gives the golden prompt ids for "Once upon a time"', () => {
    expect(golden.prompt).toBe('Once upon a time');
    expect(tokenizer.encode('Once upon a time')).toEqual([1, 403, 407, 261, 378]);
    expect(referenceEncode(reference, golden.prompt)).toEqual(golden.prompt_ids);
  });

  it('encodes the empty string to BOS only, or nothing without special tokens', () => {
    expect(tokenizer.encode('')).toEqual([1]);
    expect(referenceEncode(reference, '')).toEqual([1]);
    expect(tokenizer.encode('', { addSpecialTokens: false })).toEqual([]);
  });

  it.each(HANDPICKED.map((text) => [JSON.stringify(text), text]))('matches on %s', (_, text) => {
    expect(tokenizer.encode(text)).toEqual(referenceEncode(reference, text));
  });

  it('matches on 600 random strings of vocab pieces, whitespace, punctuation and non-vocab characters', () => {
    const mismatches = randomTexts(600, 20240601, reference.pieces.slice(259))
      .map((text) => ({ text, ours: tokenizer.encode(text), expected: referenceEncode(reference, text) }))
      .filter(({ ours, expected }) => JSON.stringify(ours) !== JSON.stringify(expected));
    expect(mismatches).toEqual([]);
  });

  it('falls back to UTF-8 byte tokens for characters outside the vocabulary', () => {
    // 😀 is F0 9F 98 80; byte b is token 3 + b.
    expect(tokenizer.encode('😀', { addSpecialTokens: false })).toEqual([410, 0xf0 + 3, 0x9f + 3, 0x98 + 3, 0x80 + 3]);
    expect(tokenizer.encode('\n', { addSpecialTokens: false })).toEqual([410, 0x0a + 3]);
  });

  it('without special tokens gives the same ids minus the leading BOS', () => {
    for (const text of HANDPICKED) {
      expect(tokenizer.encode(text, { addSpecialTokens: false })).toEqual(tokenizer.encode(text).slice(1));
    }
  });

  it('reads special-token names in the text as the special tokens (the chat template relies on it)', () => {
    // llama2.c would spell "<s>" out as "<", "s", ">"; HF tokenizers (and so the chat path,
    // which renders "{{ bos_token }}") map it to BOS, each following segment getting its own
    // dummy prefix as with HF's legacy Llama tokenizers.
    expect(tokenizer.encode('<s>Once upon a time', { addSpecialTokens: false })).toEqual([1, 403, 407, 261, 378]);
    expect(tokenizer.encode('The end.</s>', { addSpecialTokens: false })).toEqual([
      ...referenceEncode(reference, 'The end.', false),
      2,
    ]);
  });
});

describe('round trips', () => {
  it('decode(encode(s)) gives back s for hand-picked and random strings', () => {
    const texts = [...HANDPICKED, ...randomTexts(300, 7, reference.pieces.slice(259))];
    const broken = texts.filter((text) => tokenizer.decode(tokenizer.encode(text)) !== text);
    expect(broken).toEqual([]);
  });
});
