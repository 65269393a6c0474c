/**
 * What one prompt can make the tokenizer do (src/http/prompt-tokens.ts, issue 24): with
 * stopAfter it stops once past the ceiling, with keepLast (truncate_prompt_tokens) it reads
 * a text from its end, so the characters tokenized follow the context or k, not the size of
 * the body. Counted in tokenizer work (characters handed to encode()), not time. And the ids
 * are exactly encode()'s: the last k of them with keepLast, on and off the tokenizer thread.
 */
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { convertLlama2cTokenizer } from '../../src/convert/llama2c-tokenizer.js';
import { encodePrompt } from '../../src/http/prompt-tokens.js';
import { ENCODE_SLICE_CHARS, HfTokenizer } from '../../src/tokenizer/hf-tokenizer.js';
import { createNodeTokenizerThread } from '../../src/tokenizer/node-tokenizer-thread.js';
import type { Tokenizer } from '../../src/tokenizer/types.js';
import { readSentencepiece32kModel } from '../tokenizer/helpers/paths.js';
import { seededRandom } from '../tokenizer/helpers/random-text.js';
import { readSentencepiecePieces, toLlama2cTokenizerBin } from '../tokenizer/helpers/sentencepiece-model.js';

const dir = new URL('../../models/stories260k/', import.meta.url);
const embedded = HfTokenizer.fromJson(
  JSON.parse(readFileSync(new URL('tokenizer.json', dir), 'utf8')),
  JSON.parse(readFileSync(new URL('tokenizer_config.json', dir), 'utf8')),
);
const files32k = convertLlama2cTokenizer(toLlama2cTokenizerBin(readSentencepiecePieces(readSentencepiece32kModel())));
const sentencepiece32k = HfTokenizer.fromJson(files32k.tokenizerJson, files32k.tokenizerConfig, { keepSource: true });
const threaded32k = Object.create(sentencepiece32k) as HfTokenizer;
threaded32k.offLoop = createNodeTokenizerThread(sentencepiece32k.takeSource()!);
afterAll(() => threaded32k.offLoop?.close());

const PIECES = ['Lily', ' ', '  ', '   ', 'went', ' to the park', '.', '\n', '\n\n', '\t', ' <s> ', '</s>', 'é', '日本', '😀', ',', 'x'];

function randomText(seed: number, length: number, long = ''): string {
  const next = seededRandom(seed);
  const parts: string[] = [];
  let size = 0;
  while (size < length) {
    const piece = next() < 0.002 && long !== '' ? ` ${long} ` : PIECES[Math.floor(next() * PIECES.length)];
    parts.push(piece);
    size += piece.length;
  }
  return parts.join('');
}

/** 4 MB of spaced prose: the /tokenize body that cost seconds of CPU to count. */
function spacedText(length: number): string {
  const words = ['the', 'little', 'dog', 'ran', 'far', 'away', 'happy', 'sun'];
  const parts: string[] = [];
  let size = 0;
  for (let i = 0; size < length; i++) {
    const word = words[(i * 7 + (i >> 2)) % 8];
    parts.push(word);
    size += word.length + 1;
  }
  return parts.join(' ');
}

/** `tokenizer` with the characters handed to encode() counted (the tokenizer's work). */
function counting(tokenizer: HfTokenizer): { tokenizer: Tokenizer; chars: () => number } {
  let chars = 0;
  const counted = Object.create(tokenizer) as HfTokenizer;
  counted.encode = (text, options) => {
    chars += text.length;
    return tokenizer.encode(text, options);
  };
  return { tokenizer: counted, chars: () => chars };
}

describe('keepLast (truncate_prompt_tokens): the last k ids of encode(), read from the end of the text', () => {
  it('equals encode(text).slice(-k) for long random texts, any k, with and without special tokens (embedded and 32 K SentencePiece)', async () => {
    for (const [tokenizer, seeds] of [
      [embedded, [1, 2, 3]],
      [sentencepiece32k, [2]],
    ] as const) {
      for (const seed of seeds) {
        const text = (seed === 2 ? '  ' : '') + randomText(seed, ENCODE_SLICE_CHARS * 5) + (seed === 3 ? ' ' : '');
        for (const addSpecialTokens of [true, false]) {
          const all = tokenizer.encode(text, { addSpecialTokens });
          for (const keepLast of [1, 500, 6000, all.length - 1, all.length + 5]) {
            const tail = await encodePrompt(tokenizer, text, { addSpecialTokens, keepLast });
            expect(tail, `seed ${seed}, k ${keepLast}`).toEqual(all.slice(Math.max(0, all.length - keepLast)));
          }
        }
      }
    }
  });

  it('a long unbroken run near the end is tokenized on the tokenizer thread, with the same ids', async () => {
    const next = seededRandom(9);
    const cjk = Array.from({ length: 3000 }, () => String.fromCodePoint(0x4e00 + Math.floor(next() * 20000))).join('');
    const text = `${randomText(4, ENCODE_SLICE_CHARS * 3)} ${cjk} the end.`;
    const all = sentencepiece32k.encode(text);
    let sent = 0;
    const thread = threaded32k.offLoop!;
    const spied = Object.create(threaded32k) as HfTokenizer;
    spied.offLoop = { encode: (job, signal) => ((sent += 1), thread.encode(job, signal)), close: () => thread.close() };
    expect(await encodePrompt(spied, text, { keepLast: 4000 })).toEqual(all.slice(-4000));
    expect(sent).toBe(1);
  });

  it('tokenizes about k tokens of a 4 MB text, not the text (counted in characters encoded)', async () => {
    const text = spacedText(4_000_000);
    const { tokenizer, chars } = counting(embedded);
    const tail = await encodePrompt(tokenizer, text, { keepLast: 100, stopAfter: 511, lengthCeiling: 512 });
    expect(tail).toHaveLength(100);
    // The last slice (~16 K characters) covers 100 tokens: at most a slice and a bit is read.
    expect(chars()).toBeLessThan(2 * ENCODE_SLICE_CHARS);
    expect(tail).toEqual(embedded.encode(text.slice(-20_000), { addSpecialTokens: false }).slice(-100));
  });

  it('with k past the ceiling, stops once there are more than stopAfter ids (the prompt is refused anyway)', async () => {
    const text = spacedText(4_000_000);
    const { tokenizer, chars } = counting(embedded);
    const tail = await encodePrompt(tokenizer, text, { keepLast: 10 ** 9, stopAfter: 511, lengthCeiling: 512 });
    expect(tail.length).toBeGreaterThan(511);
    expect(chars()).toBeLessThan(2 * ENCODE_SLICE_CHARS);
  });

  it('a slice whose length alone shows more tokens than the ceiling is refused before it is tokenized', async () => {
    const word = 'etaoinshrdlucmfw'.repeat(2000); // 32 K characters with no place to cut
    const text = `${spacedText(100_000)} ${word}`;
    const { tokenizer, chars } = counting(embedded);
    let refused = 0;
    const result = encodePrompt(tokenizer, text, {
      keepLast: 100,
      stopAfter: 511,
      lengthCeiling: 512,
      refuseAtLeast: (atLeast) => {
        refused = atLeast;
        throw new Error('refused');
      },
    });
    await expect(result).rejects.toThrow('refused');
    expect(refused).toBeGreaterThan(512);
    expect(chars()).toBe(0);
  });
});

describe('stopAfter: tokenizing stops once past the ceiling', () => {
  it('reads a slice or two of a 4 MB text (counted in characters encoded); the ids are the prefix of encode()', async () => {
    const text = spacedText(4_000_000);
    const { tokenizer, chars } = counting(embedded);
    const ids = await encodePrompt(tokenizer, text, { stopAfter: 512 });
    expect(ids.length).toBeGreaterThan(512);
    expect(chars()).toBeLessThan(3 * ENCODE_SLICE_CHARS);
    expect(ids).toEqual(embedded.encode(text.slice(0, 60_000)).slice(0, ids.length));
  });
});
