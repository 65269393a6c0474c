/**
 * A GGUF's SentencePiece vocabulary tokenized as sentencepiece and llama.cpp tokenize it, and
 * its pieces rendered as llama.cpp renders them. The fixture (scripts/gguf/make_tokenizer_fixtures.py)
 * is a hand-made SentencePiece BPE model in Gemma's layout with pieces whose halves are not
 * pieces ("\n\n" without "\n", as gemma2-style vocabularies have), a piece no merge reaches,
 * and unused pieces ([PAD300], as padded vocabularies carry); its references are
 * sentencepiece's own encoder on the same pieces and llama.cpp's tokenizer and
 * llama_token_to_piece (libllama of the node-llama-cpp bundle) on the GGUF itself.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { readGguf } from '../../src/gguf/gguf-file.js';
import { ggufTokenizerFiles } from '../../src/gguf/gguf-tokenizer.js';
import { HfTokenizer } from '../../src/tokenizer/hf-tokenizer.js';

interface Reference {
  texts: string[];
  sentencepiece: Record<string, number[]>;
  detokenize_ids: number[];
  llama_cpp_tokenize: Record<string, number[]>;
  llama_cpp_detokenize: Record<string, string>;
  llama_cpp_detokenize_special: Record<string, string>;
}

const fixture = (name: string) => new URL(`../fixtures/gguf/${name}`, import.meta.url);
const reference = JSON.parse(readFileSync(fixture('tiny-spm-pieces.json'), 'utf8')) as Reference;

async function tokenizer(): Promise<{ tokenizer: HfTokenizer; tokens: string[] }> {
  const bytes = new Uint8Array(readFileSync(fixture('tiny-spm-pieces.gguf')));
  const file = await readGguf({ size: bytes.byteLength, read: async (offset, length) => bytes.subarray(offset, offset + length) });
  const { tokenizerJson, tokenizerConfig } = ggufTokenizerFiles(file, 64);
  return { tokenizer: HfTokenizer.fromJson(tokenizerJson, tokenizerConfig), tokens: file.metadata.get('tokenizer.ggml.tokens') as string[] };
}

describe('GGUF SentencePiece vocabulary', () => {
  it('tokenizes every text as llama.cpp does (special tokens parsed, as llama-server parses prompts)', async () => {
    const { tokenizer: spm } = await tokenizer();
    for (const text of reference.texts) {
      expect(spm.encode(text, { addSpecialTokens: false }), JSON.stringify(text)).toEqual(reference.llama_cpp_tokenize[text]);
    }
  });

  it('tokenizes as sentencepiece does, pieces whose halves are not pieces included ("a\\n\\nb" uses "\\n\\n")', async () => {
    const { tokenizer: spm, tokens } = await tokenizer();
    const newlines = tokens.indexOf('\n\n');
    expect(spm.encode('a\n\nb', { addSpecialTokens: false })).toEqual([tokens.indexOf('a'), newlines, tokens.indexOf('b')]);
    // sentencepiece does not match control pieces in text; llama.cpp (and this server) do, for prompts.
    for (const text of reference.texts.filter((t) => !t.includes('<eos>'))) {
      expect(spm.encode(text, { addSpecialTokens: false }), JSON.stringify(text)).toEqual(reference.sentencepiece[text]);
    }
  });

  it('renders control pieces only when special tokens are asked for, unused pieces never, as llama.cpp', async () => {
    const { tokenizer: spm, tokens } = await tokenizer();
    for (const id of reference.detokenize_ids) {
      // skip_special_tokens false asks for what llama_token_to_piece renders with special = true.
      expect(spm.decode([id], { skipSpecialTokens: false }), tokens[id]).toBe(reference.llama_cpp_detokenize_special[String(id)]);
      expect(spm.decode([id]), tokens[id]).toBe(reference.llama_cpp_detokenize[String(id)]);
    }
    const pad = tokens.indexOf('[PAD300]');
    const eos = tokens.indexOf('<eos>');
    const hello = tokens.indexOf('hello');
    expect(reference.llama_cpp_detokenize_special[String(pad)]).toBe('');
    expect(spm.decode([hello, pad, tokens.indexOf('<unused0>'), hello])).toBe('hellohello');
    expect(spm.decode([hello, eos])).toBe('hello');
    expect(spm.decode([hello, eos], { skipSpecialTokens: false })).toBe('hello<eos>');
  });
});
