import { describe, expect, it } from 'vitest';
import { HfTokenizer } from '../../src/tokenizer/hf-tokenizer.js';
import { storiesTokenizer, storiesTokenizerFiles } from './helpers/stories-tokenizer.js';

/** GPT-2's byte-to-character table: printable Latin-1 maps to itself, the rest above U+0100. */
function byteLevelAlphabet(): string[] {
  const table: string[] = [];
  let shifted = 0;
  for (let byte = 0; byte < 256; byte++) {
    const printable = (byte >= 0x21 && byte <= 0x7e) || (byte >= 0xa1 && byte <= 0xac) || (byte >= 0xae && byte <= 0xff);
    table.push(String.fromCharCode(printable ? byte : 256 + shifted++));
  }
  return table;
}

/** A tiny GPT-2-style byte-level BPE tokenizer.json: no BOS, "<|endoftext|>" as EOS. */
function byteLevelTokenizer() {
  const alphabet = byteLevelAlphabet();
  const vocab: Record<string, number> = {};
  alphabet.forEach((char, id) => (vocab[char] = id));
  const merges = [['Ġ', 't'], ['h', 'e'], ['Ġt', 'he'], ['Ġ', 'c'], ['a', 't'], ['Ġc', 'at']];
  for (const [left, right] of merges) vocab[left + right] = Object.keys(vocab).length;
  const eos = Object.keys(vocab).length;
  const tokenizerJson = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [{ id: eos, content: '<|endoftext|>', single_word: false, lstrip: false, rstrip: false, normalized: false, special: true }],
    normalizer: null,
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    post_processor: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true },
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '', end_of_word_suffix: '', fuse_unk: false, byte_fallback: false, vocab, merges },
  };
  const tokenizerConfig = { bos_token: '<|endoftext|>', eos_token: '<|endoftext|>', unk_token: '<|endoftext|>', clean_up_tokenization_spaces: false };
  return { tokenizer: HfTokenizer.fromJson(tokenizerJson, tokenizerConfig), vocab, eos };
}

describe('HfTokenizer with other tokenizer.json shapes', () => {
  it('loads a GPT-2-style byte-level BPE: merges apply, nothing is prepended, text round-trips', () => {
    const { tokenizer, vocab, eos } = byteLevelTokenizer();
    const ids = tokenizer.encode('x the cat');
    expect(ids).toEqual([vocab['x'], vocab['Ġthe'], vocab['Ġcat']]);
    expect(tokenizer.bosTokenId).toBeNull();
    expect(tokenizer.eosTokenIds).toEqual([eos]);
    expect(tokenizer.specialTokenIds).toEqual(new Set([eos]));
    for (const text of ['x the cat', 'héllo 😀 日本\n\ttabs  and  spaces ', '']) {
      expect(tokenizer.decode(tokenizer.encode(text))).toBe(text);
    }
    expect(tokenizer.encode('a<|endoftext|>')).toEqual([vocab['a'], eos]);
    expect(tokenizer.decode([vocab['a'], eos], { skipSpecialTokens: false })).toBe('a<|endoftext|>');
    expect(tokenizer.decode([vocab['a'], eos])).toBe('a');
  });

  it('loads the Metaspace form of Llama tokenizers (legacy: false) with the same ids for plain text', () => {
    const { tokenizerJson, tokenizerConfig } = storiesTokenizerFiles();
    const metaspace = {
      ...tokenizerJson,
      normalizer: null,
      pre_tokenizer: { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'first', split: false },
      decoder: { type: 'Sequence', decoders: [{ type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'first', split: false }, { type: 'ByteFallback' }, { type: 'Fuse' }] },
    };
    const tokenizer = HfTokenizer.fromJson(metaspace, { ...tokenizerConfig, legacy: false });
    const legacy = storiesTokenizer();
    for (const text of ['Once upon a time', 'Lily saw a big, red ball 😀.\nThe end.']) {
      expect(tokenizer.encode(text)).toEqual(legacy.encode(text));
      expect(tokenizer.decode(tokenizer.encode(text))).toBe(text);
    }
  });

  it('takes EOS ids from eos_token_id, an AddedToken-shaped eos_token, or the caller', () => {
    const { tokenizerJson, tokenizerConfig } = storiesTokenizerFiles();
    const fromList = HfTokenizer.fromJson(tokenizerJson, { ...tokenizerConfig, eos_token_id: [2, 1] });
    expect(fromList.eosTokenIds).toEqual([2, 1]);
    const fromObject = HfTokenizer.fromJson(tokenizerJson, { ...tokenizerConfig, eos_token: { __type: 'AddedToken', content: '</s>' } });
    expect(fromObject.eosTokenIds).toEqual([2]);
    const overridden = HfTokenizer.fromJson(tokenizerJson, tokenizerConfig, { eosTokenIds: [1, 2] });
    expect(overridden.eosTokenIds).toEqual([1, 2]);
  });

  it('rejects input that is not a JSON object', () => {
    expect(() => HfTokenizer.fromJson('tokenizer.json', {})).toThrow(/tokenizer\.json must be a JSON object/);
  });
});
