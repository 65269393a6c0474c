/**
 * The tokenizer bridge's stop tokens: llama.cpp ends a generation on the file's EOS / EOT / EOM
 * ids and on the end-of-generation texts it knows wherever they sit in the vocabulary
 * (llama-vocab.cpp), e.g. Phi-3's <|end|> beside its <|endoftext|> EOS, Qwen's <|endoftext|>
 * beside its <|im_end|> EOS; the engine stops on the same ids.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { readGguf } from '../../src/gguf/gguf-file.js';
import { ggufTokenizerFiles } from '../../src/gguf/gguf-tokenizer.js';
import { HfTokenizer } from '../../src/tokenizer/hf-tokenizer.js';

async function stopTexts(fixture: string): Promise<string[]> {
  const bytes = new Uint8Array(readFileSync(new URL(`../fixtures/gguf/${fixture}`, import.meta.url)));
  const file = await readGguf({ size: bytes.byteLength, read: async (offset, length) => bytes.subarray(offset, offset + length) });
  const tokens = file.metadata.get('tokenizer.ggml.tokens') as string[];
  const { eosTokenIds, tokenizerConfig } = ggufTokenizerFiles(file, 512);
  // Each is special (not rendered in text, matched whole in a prompt), as llama.cpp makes them control tokens.
  const decoder = tokenizerConfig.added_tokens_decoder as Record<string, { special: boolean }>;
  for (const id of eosTokenIds) expect(decoder[String(id)]?.special).toBe(true);
  return eosTokenIds.map((id) => tokens[id]).sort();
}

describe('GGUF stop tokens', () => {
  it('phi3: EOS <|endoftext|>, <|end|> (the chat turn end) and SentencePiece\'s </s>', async () => {
    expect(await stopTexts('tiny-phi3.gguf')).toEqual(['</s>', '<|endoftext|>', '<|end|>']);
  });

  it('qwen3: EOS <|im_end|> and <|endoftext|>', async () => {
    expect(await stopTexts('tiny-qwen3.gguf')).toEqual(['<|endoftext|>', '<|im_end|>']);
  });

  it('llama (SentencePiece): EOS </s> alone', async () => {
    expect(await stopTexts('tiny-llama-kquants.gguf')).toEqual(['</s>']);
  });
});

describe('GGUF padded byte-level vocabulary', () => {
  it('renders the [PAD…] fillers convert_hf_to_gguf.py appends (type UNUSED) as nothing, special tokens asked for or not, as llama.cpp', async () => {
    const bytes = new Uint8Array(readFileSync(new URL('../fixtures/gguf/tiny-qwen3.gguf', import.meta.url)));
    const file = await readGguf({ size: bytes.byteLength, read: async (offset, length) => bytes.subarray(offset, offset + length) });
    const tokens = [...(file.metadata.get('tokenizer.ggml.tokens') as string[])];
    const types = [...(file.metadata.get('tokenizer.ggml.token_type') as number[])];
    // As the converter pads a vocabulary to the embedding's rows: "[PAD{id}]", llama_token_type UNUSED (5).
    const pad = tokens.length;
    tokens.push(`[PAD${pad}]`, `[PAD${pad + 1}]`);
    types.push(5, 5);
    file.metadata.set('tokenizer.ggml.tokens', tokens);
    file.metadata.set('tokenizer.ggml.token_type', types);
    const { tokenizerJson, tokenizerConfig } = ggufTokenizerFiles(file, 512);
    const tokenizer = HfTokenizer.fromJson(tokenizerJson, tokenizerConfig);
    const hello = tokenizer.encode('Hello', { addSpecialTokens: false });
    const imEnd = tokens.indexOf('<|im_end|>');
    expect(tokenizer.decode([...hello, pad, pad + 1, ...hello])).toBe('HelloHello');
    expect(tokenizer.decode([...hello, pad, imEnd], { skipSpecialTokens: false })).toBe('Hello<|im_end|>');
    expect(tokenizer.decode([...hello, imEnd])).toBe('Hello');
    // Not matched in a prompt: llama.cpp only parses control and user-defined pieces in text.
    expect(tokenizer.encode(`[PAD${pad}]`, { addSpecialTokens: false })).not.toContain(pad);
  });
});
