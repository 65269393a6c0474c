import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Template } from '@huggingface/jinja';
import { convertLlama2cTokenizer, parseLlama2cTokenizer } from '../../src/convert/llama2c-tokenizer.js';
import { HfTokenizer } from '../../src/tokenizer/hf-tokenizer.js';
import { COMMITTED_MODEL_DIR, readTok512 } from './helpers/paths.js';

interface ConvertedJson {
  added_tokens: { id: number; content: string; special: boolean }[];
  model: { type: string; byte_fallback: boolean; unk_token: string; vocab: Record<string, number>; merges: string[] };
}
interface ConvertedConfig {
  bos_token: string;
  eos_token: string;
  unk_token: string;
  add_bos_token: boolean;
  add_eos_token: boolean;
  model_max_length: number;
  tokenizer_class: string;
  chat_template: string;
}

const tok512 = readTok512();
const converted = convertLlama2cTokenizer(tok512);
const json = converted.tokenizerJson as ConvertedJson;
const config = converted.tokenizerConfig as ConvertedConfig;
const tokenizer = HfTokenizer.fromJson(json, config);

describe('convertLlama2cTokenizer on tok512.bin', () => {
  it('keeps every id and renames pieces the HF way', () => {
    const { entries } = parseLlama2cTokenizer(tok512);
    expect(entries).toHaveLength(512);
    const vocab = json.model.vocab;
    expect(Object.keys(vocab)).toHaveLength(512);
    expect([vocab['<unk>'], vocab['<s>'], vocab['</s>']]).toEqual([0, 1, 2]);
    expect(vocab['<0x00>']).toBe(3);
    expect(vocab['<0xFF>']).toBe(258);
    expect(vocab['\u2581']).toBe(410);
    expect(vocab['\u2581Once']).toBe(403);
    // The stored text of every ordinary piece, with spaces as ▁.
    entries.forEach((entry, id) => {
      if (id >= 3) expect(vocab[entry.raw.replaceAll(' ', '\u2581')]).toBe(id);
    });
    expect(Object.keys(vocab).some((piece) => piece.includes(' '))).toBe(false);
  });

  it('is a byte-fallback BPE with <unk>, <s>, </s> as special added tokens', () => {
    expect(json.model).toMatchObject({ type: 'BPE', byte_fallback: true, unk_token: '<unk>' });
    expect(json.added_tokens.map(({ id, content, special }) => [id, content, special])).toEqual([
      [0, '<unk>', true],
      [1, '<s>', true],
      [2, '</s>', true],
    ]);
    expect([...tokenizer.specialTokenIds].sort()).toEqual([0, 1, 2]);
  });

  it('orders merges by the merged piece score, highest first, over all two-piece splits', () => {
    const { entries } = parseLlama2cTokenizer(tok512);
    const vocab = json.model.vocab;
    const scoreOf = (merge: string) => entries[vocab[merge.replace(' ', '')]].score;
    const scores = json.model.merges.map(scoreOf);
    expect(scores.every((score, i) => i === 0 || score <= scores[i - 1])).toBe(true);
    // "▁the" (265) can be made as ▁t+he and ▁th+e: both splits are merges.
    expect(json.model.merges).toContain('\u2581t he');
    expect(json.model.merges).toContain('\u2581th e');
    for (const merge of json.model.merges) {
      const [left, right] = merge.split(' ');
      expect(vocab[left]).toBeGreaterThan(258);
      expect(vocab[right]).toBeGreaterThan(258);
    }
  });

  it('writes a LlamaTokenizer config that adds BOS but not EOS', () => {
    expect(config).toMatchObject({
      bos_token: '<s>',
      eos_token: '</s>',
      unk_token: '<unk>',
      add_bos_token: true,
      add_eos_token: false,
      model_max_length: 512,
      tokenizer_class: 'LlamaTokenizer',
    });
    expect(tokenizer.bosTokenId).toBe(1);
    expect(tokenizer.eosTokenIds).toEqual([2]);
    expect(tokenizer.vocabSize).toBe(512);
  });

  it('survives a JSON round trip (as written to disk) unchanged', () => {
    const reloaded = HfTokenizer.fromJson(
      JSON.parse(JSON.stringify(json)),
      JSON.parse(JSON.stringify(config)),
    );
    const text = 'Once upon a time, 日本 😀 toString constructor __proto__';
    expect(reloaded.encode(text)).toEqual(tokenizer.encode(text));
  });

  it('rejects a truncated file', () => {
    expect(() => convertLlama2cTokenizer(tok512.subarray(0, 1000))).toThrow(/truncated/);
  });
});

describe('the story chat template', () => {
  const template = new Template(config.chat_template);
  const render = (messages: { role: string; content: unknown }[], addGenerationPrompt = true) =>
    template.render({ messages, bos_token: config.bos_token, eos_token: config.eos_token, add_generation_prompt: addGenerationPrompt });

  it('renders BOS then the contents as plain text, system first, turns on new lines', () => {
    expect(
      render([
        { role: 'user', content: 'Tell me a story.' },
        { role: 'system', content: 'You tell stories to children.' },
        { role: 'assistant', content: 'Once upon a time' },
      ]),
    ).toBe('<s>You tell stories to children.\nTell me a story.\nOnce upon a time');
  });

  it('adds nothing for the generation prompt, so the reply continues the text', () => {
    const messages = [{ role: 'user', content: 'Once upon a time' }];
    expect(render(messages, true)).toBe('<s>Once upon a time');
    expect(render(messages, false)).toBe('<s>Once upon a time');
  });

  it('reads text parts of list contents and leaves out empty turns', () => {
    expect(
      render([
        { role: 'user', content: [{ type: 'text', text: 'A cat' }, { type: 'image_url' }, { type: 'text', text: ' sat.' }] },
        { role: 'assistant', content: null },
      ]),
    ).toBe('<s>A cat sat.');
  });

  it('encodes (without adding special tokens) to exactly one BOS and the same ids as plain text', () => {
    const rendered = render([{ role: 'user', content: 'Once upon a time' }]);
    expect(tokenizer.encode(rendered, { addSpecialTokens: false })).toEqual([1, 403, 407, 261, 378]);
    const multi = render([
      { role: 'system', content: 'Be kind.' },
      { role: 'user', content: 'Lily had a ball.' },
    ]);
    const ids = tokenizer.encode(multi, { addSpecialTokens: false });
    expect(ids.filter((id) => id === 1)).toHaveLength(1);
    expect(ids).toEqual(tokenizer.encode('Be kind.\nLily had a ball.'));
  });
});

describe('the committed models/stories260k tokenizer files', () => {
  const committedJson = join(COMMITTED_MODEL_DIR, 'tokenizer.json');
  const committedConfig = join(COMMITTED_MODEL_DIR, 'tokenizer_config.json');

  it('equal this conversion of tok512.bin', () => {
    expect(existsSync(committedJson), `${committedJson} missing: run npm run convert`).toBe(true);
    expect(JSON.parse(readFileSync(committedJson, 'utf8'))).toEqual(JSON.parse(JSON.stringify(json)));
    expect(JSON.parse(readFileSync(committedConfig, 'utf8'))).toEqual(JSON.parse(JSON.stringify(config)));
  });
});
