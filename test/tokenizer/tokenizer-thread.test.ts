import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { convertLlama2cTokenizer } from '../../src/convert/llama2c-tokenizer.js';
import { readGguf } from '../../src/gguf/gguf-file.js';
import { ggufTokenizerFiles } from '../../src/gguf/gguf-tokenizer.js';
import { encodePrompt } from '../../src/http/prompt-tokens.js';
import { HfTokenizer } from '../../src/tokenizer/hf-tokenizer.js';
import { createNodeTokenizerThread } from '../../src/tokenizer/node-tokenizer-thread.js';
import { longestPieceBound, pieceBreaksOf } from '../../src/tokenizer/piece-length.js';
import { OFF_LOOP_RUN_CHARS, type TokenizerThread } from '../../src/tokenizer/tokenizer-thread.js';
import { readSentencepiece32kModel } from './helpers/paths.js';
import { seededRandom } from './helpers/random-text.js';
import { readSentencepiecePieces, toLlama2cTokenizerBin } from './helpers/sentencepiece-model.js';

type Files = { tokenizerJson: Record<string, unknown>; tokenizerConfig: Record<string, unknown> };
const json = (path: string) => JSON.parse(readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8')) as Record<string, unknown>;
const folder = (dir: string): Files => ({ tokenizerJson: json(`${dir}/tokenizer.json`), tokenizerConfig: json(`${dir}/tokenizer_config.json`) });

async function gguf(file: string): Promise<Files> {
  const bytes = readFileSync(new URL(`../fixtures/gguf/${file}`, import.meta.url));
  const parsed = await readGguf({ size: bytes.byteLength, read: async (offset, length) => bytes.subarray(offset, offset + length) });
  return ggufTokenizerFiles(parsed, 512);
}

/** Every tokenizer family the fixtures have. */
const FAMILIES: Array<[string, () => Files | Promise<Files>]> = [
  ['stories260k (SentencePiece 512, the embedded model)', () => folder('models/stories260k')],
  ['the 32 K SentencePiece vocabulary', () => convertLlama2cTokenizer(toLlama2cTokenizerBin(readSentencepiecePieces(readSentencepiece32kModel()))) as Files],
  ['transformers 5 Llama (Metaspace pre-tokenizer, no split)', () => folder('test/fixtures/transformers5/text')],
  ['SmolVLM (byte-level BPE, GPT-2 regex)', () => folder('test/fixtures/multimodal/smolvlm')],
  ['GGUF llama (SentencePiece)', () => gguf('tiny-llama-legacy.gguf')],
  ['GGUF gpt2 llama-bpe (byte-level)', () => gguf('tiny-llama-bpe.gguf')],
  ['GGUF gpt2 qwen2 (byte-level)', () => gguf('tiny-qwen2.gguf')],
];

/** The pieces no pre-tokenizer can cut, and prose around them. */
function hardTexts(seed: number): string[] {
  const next = seededRandom(seed);
  const cjk = Array.from({ length: 3000 }, () => String.fromCodePoint(0x4e00 + Math.floor(next() * 20000))).join('');
  const word = Array.from({ length: 3000 }, () => 'etaoinshrdlucmfw'[Math.floor(next() * 16)]).join('');
  return [cjk, word, 'a'.repeat(3000), ' '.repeat(2000), `Once upon a time ${word} there was\n\n${cjk}. The end.`, `${'!'.repeat(600)}\n\n\n${'x'.repeat(400)} y`];
}

const threads: TokenizerThread[] = [];
afterAll(async () => {
  await Promise.all(threads.map((thread) => thread.close()));
});

describe('tokenizing on the tokenizer thread', () => {
  for (const [name, load] of FAMILIES) {
    it(`${name}: the same ids as encode() for long unbroken runs (CJK, one word, one character, spaces), and the prefix with stopAfter`, async () => {
      const files = await load();
      const tokenizer = HfTokenizer.fromJson(files.tokenizerJson, files.tokenizerConfig, { keepSource: true });
      const source = tokenizer.takeSource();
      expect(source).not.toBeNull();
      expect(tokenizer.takeSource()).toBeNull();
      const thread = createNodeTokenizerThread(source!);
      threads.push(thread);
      tokenizer.offLoop = thread;
      let sent = 0;
      const counting: TokenizerThread = { encode: (job, signal) => ((sent += 1), thread.encode(job, signal)), close: () => thread.close() };
      tokenizer.offLoop = counting;
      for (const text of hardTexts(name.length)) {
        for (const addSpecialTokens of [true, false]) {
          const expected = tokenizer.encode(text, { addSpecialTokens });
          expect(await encodePrompt(tokenizer, text, { addSpecialTokens })).toEqual(expected);
          const stopped = await encodePrompt(tokenizer, text, { addSpecialTokens, stopAfter: 100 });
          expect(stopped.length).toBeGreaterThan(Math.min(100, expected.length - 1));
          expect(stopped).toEqual(expected.slice(0, stopped.length));
        }
      }
      // Every one of those texts has a piece past OFF_LOOP_RUN_CHARS: none was tokenized on the loop.
      expect(sent).toBe(hardTexts(0).length * 4);
      // Prose stays on the loop (no thread round trip for ordinary prompts).
      expect(await encodePrompt(tokenizer, 'Once upon a time, there was a little girl named Lily.')).toEqual(tokenizer.encode('Once upon a time, there was a little girl named Lily.'));
      expect(sent).toBe(hardTexts(0).length * 4);
    });
  }

  it('stops a job whose request goes away, and the next job gets a fresh thread with the same ids', async () => {
    const files = FAMILIES[1][1]() as Files;
    const tokenizer = HfTokenizer.fromJson(files.tokenizerJson, files.tokenizerConfig, { keepSource: true });
    const thread = createNodeTokenizerThread(tokenizer.takeSource()!);
    threads.push(thread);
    const text = Array.from({ length: 60_000 }, (_, i) => String.fromCodePoint(0x4e00 + ((i * 7919) % 20000))).join('');
    const controller = new AbortController();
    const pending = thread.encode({ text, addSpecialTokens: true }, controller.signal);
    setTimeout(() => controller.abort(new Error('client gone')), 50);
    await expect(pending).rejects.toThrow('client gone');
    const short = 'x'.repeat(OFF_LOOP_RUN_CHARS * 2);
    expect(await thread.encode({ text: short, addSpecialTokens: true })).toEqual(tokenizer.encode(short));
  });
});

describe('longestPieceBound', () => {
  it("is never shorter than the longest piece the tokenizer's own normalizer and pre-tokenizer hand the model", async () => {
    const next = seededRandom(7);
    const alphabet = ['a', 'b', 'word', ' ', '  ', '\n', '\n\n', '\t', '!', '?!', '.', '12345', ' \n ', 'é'];
    const texts = Array.from({ length: 300 }, () => Array.from({ length: 1 + Math.floor(next() * 60) }, () => alphabet[Math.floor(next() * alphabet.length)]).join(''));
    for (const [name, load] of FAMILIES) {
      const files = await load();
      const tokenizer = HfTokenizer.fromJson(files.tokenizerJson, files.tokenizerConfig);
      const impl = (tokenizer as unknown as { impl: { normalizer: ((text: string) => string) | null; pre_tokenizer: ((text: string) => string[]) | null } }).impl;
      const breaks = pieceBreaksOf(files.tokenizerJson, impl.pre_tokenizer?.constructor.name === 'MetaspaceWordSplitter');
      for (const text of texts) {
        const normalized = impl.normalizer ? impl.normalizer(text) : text;
        const pieces = impl.pre_tokenizer ? impl.pre_tokenizer(normalized) : [normalized];
        // Byte-level pieces are in bytes (é is two): this test's texts are ASCII but for é, counted once per byte.
        const longest = Math.max(0, ...pieces.map((piece) => [...piece].length));
        const extraBytes = (text.match(/é/g) ?? []).length;
        expect(longestPieceBound(text, breaks) + 1 + extraBytes, `${name}: ${JSON.stringify(text)}`).toBeGreaterThanOrEqual(longest);
      }
    }
  });
});
