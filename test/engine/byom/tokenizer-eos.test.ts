/**
 * A Qwen-style model folder: byte-level BPE tokenizer, ChatML template, <|im_end|> as EOS
 * only in tokenizer_config.json. Generation stops there instead of never.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { chatTemplateFromTokenizerConfig } from '../../../src/tokenizer/chat-template.js';
import { createNodeEngine } from '../../../src/runtime/node/engine.js';
import { collectGeneration } from '../../helpers/model.js';
import { byteLevelTokenizerFiles, referenceGreedy, removeFixtureFolders, writeFixtureFolder } from '../../helpers/byom-fixtures.js';

afterAll(removeFixtureFolders);

const { special } = byteLevelTokenizerFiles();
// The reference model's greedy continuation of these two bytes reaches <|im_end|> after five tokens.
const PROMPT = [32, 46];

describe('EOS from tokenizer_config.json when config.json and generation_config.json name none', () => {
  it('stops at <|im_end|> with finish reason stop', async () => {
    const reference = referenceGreedy(PROMPT, 6).tokenIds;
    expect(reference.at(-1)).toBe(special.imEnd);
    const dir = await writeFixtureFolder({ config: { eos_token_id: null }, generationConfig: null });
    const engine = await createNodeEngine({ modelDir: dir });
    try {
      expect(engine.spec.eosTokenIds).toEqual([special.imEnd]);
      const out = await collectGeneration(engine, PROMPT, { temperature: 0, maxTokens: 30 });
      expect(out.finishReason).toBe('stop');
      expect(out.tokenIds).toEqual(reference);
    } finally {
      await engine.dispose();
    }
  });

  it('renders the ChatML template and encodes its special tokens as single ids', async () => {
    const dir = await writeFixtureFolder();
    const engine = await createNodeEngine({ modelDir: dir });
    try {
      const template = chatTemplateFromTokenizerConfig(engine.tokenizerConfig);
      expect(template).not.toBeNull();
      const text = template!.render([{ role: 'user', content: 'Hi there' }], { addGenerationPrompt: true, continueFinalMessage: false });
      expect(text).toBe('<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n');
      const ids = engine.tokenizer.encode(text);
      expect(ids.filter((id) => id === special.imStart)).toHaveLength(2);
      expect(ids.filter((id) => id === special.imEnd)).toHaveLength(1);
      expect(engine.tokenizer.decode(ids, { skipSpecialTokens: false })).toBe(text);
      // Configs name <|im_end|> and <|endoftext|>; tokenizer_config.json adds nothing new.
      expect(engine.spec.eosTokenIds).toEqual([special.imEnd, special.endOfText]);
      // The fixture's tokenizer_config.json allows 131072 tokens, its config.json 96.
      expect(engine.info.maxModelLen).toBe(96);
      expect(engine.loadReport.notes).toEqual([
        expect.stringMatching(/^Context: 96 tokens \(the model's config\); KV cache up to /),
        "config.json's max_position_embeddings (96) and tokenizer_config.json's model_max_length (131072) disagree: the context is the smaller, 96 tokens.",
      ]);
    } finally {
      await engine.dispose();
    }
  });
});
