/**
 * The reasoning parsers against vLLM's (vllm/reasoning/deepseek_r1_reasoning_parser.py,
 * qwen3_reasoning_parser.py, deepseek_v3_reasoning_parser.py, current release): the same
 * (reasoning, content) for whole outputs, and streamed token by token through a real
 * tokenizer (the Qwen3 BPE tokenizer of test/fixtures/gguf/tiny-qwen3.gguf, where
 * `<think>` and `</think>` are added tokens as in Qwen3's own), the deltas adding up to
 * the same split with reasoning never in content.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/engine/types.js';
import { REASONING_PARSERS, REASONING_PARSER_NAMES, type ReasoningParserName } from '../../src/reasoning/index.js';
import { ReasoningStream, readReasoning } from '../../src/reasoning/reasoning-stream.js';
import type { ReasoningRequestOptions } from '../../src/reasoning/types.js';
import { createNodeEngine } from '../../src/runtime/node/engine.js';
import { IncrementalDetokenizer } from '../../src/tokenizer/detokenizer.js';

const whole = (name: ReasoningParserName, text: string, options: ReasoningRequestOptions = {}) =>
  readReasoning(REASONING_PARSERS[name].create(options), false, text);

describe('whole outputs, as vLLM extracts them', () => {
  it('deepseek_r1: <think> optional, no </think> means all reasoning', () => {
    expect(whole('deepseek_r1', '<think>abc</think>xyz')).toEqual({ reasoning: 'abc', content: 'xyz' });
    expect(whole('deepseek_r1', 'abc</think>xyz')).toEqual({ reasoning: 'abc', content: 'xyz' });
    expect(whole('deepseek_r1', '<think>abc</think>')).toEqual({ reasoning: 'abc', content: null });
    expect(whole('deepseek_r1', 'abc')).toEqual({ reasoning: 'abc', content: null });
    expect(whole('deepseek_r1', '<think>\nLet me see.\n</think>\n\nIt is 4.')).toEqual({ reasoning: '\nLet me see.\n', content: '\n\nIt is 4.' });
  });

  it('qwen3: like deepseek_r1 while thinking; with enable_thinking false an output without </think> is content', () => {
    expect(whole('qwen3', '<think>abc</think>xyz')).toEqual({ reasoning: 'abc', content: 'xyz' });
    expect(whole('qwen3', 'abc</think>xyz')).toEqual({ reasoning: 'abc', content: 'xyz' });
    expect(whole('qwen3', 'abc')).toEqual({ reasoning: 'abc', content: null });
    const off = { chatTemplateKwargs: { enable_thinking: false } };
    expect(whole('qwen3', 'abc', off)).toEqual({ reasoning: null, content: 'abc' });
    expect(whole('qwen3', '<think>abc</think>xyz', off)).toEqual({ reasoning: 'abc', content: 'xyz' });
    // vLLM's streaming path: no thought opened, so a stray </think> stays in the content.
    expect(whole('qwen3', 'abc</think>xyz', off)).toEqual({ reasoning: null, content: 'abc</think>xyz' });
  });

  it('qwen3: a <tool_call> inside an unclosed thought ends it, so the call is content', () => {
    expect(whole('qwen3', '<think>I will call it.\n<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>')).toEqual({
      reasoning: 'I will call it.\n',
      content: '<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>',
    });
  });

  it('deepseek_v3: thinks only with chat_template_kwargs thinking: true', () => {
    expect(whole('deepseek_v3', 'abc</think>xyz')).toEqual({ reasoning: null, content: 'abc</think>xyz' });
    expect(whole('deepseek_v3', 'abc</think>xyz', { chatTemplateKwargs: { thinking: true } })).toEqual({ reasoning: 'abc', content: 'xyz' });
  });

  it('a prompt that closed the thought (Qwen3\'s enable_thinking false template) makes the output content', () => {
    const parser = REASONING_PARSERS.qwen3.create({});
    expect(parser.promptEndsReasoning('<|im_start|>assistant\n<think>\n\n</think>\n\n')).toBe(true);
    expect(parser.promptEndsReasoning('<|im_start|>assistant\n')).toBe(false);
    expect(parser.promptEndsReasoning('<|im_start|>assistant\n<think>\n')).toBe(false);
    expect(readReasoning(parser, true, 'abc</think>xyz')).toEqual({ reasoning: null, content: 'abc</think>xyz' });
  });
});

describe('streamed through a real tokenizer, token by token', () => {
  let engine: Engine;
  beforeAll(async () => {
    process.env.GGUF_CACHE_DIR ??= mkdtempSync(join(tmpdir(), 'reasoning-gguf-'));
    engine = await createNodeEngine({ modelDir: 'test/fixtures/gguf/tiny-qwen3.gguf' });
  });
  afterAll(() => engine.dispose());

  const outputs = [
    '<think>\nThe dog ran. Lily saw it.\n</think>\n\nOnce upon a time, there was a dog.',
    '\nThe dog ran.\n</think>\n\nLily smiled.',
    '<think>\nStill thinking about the dog',
    'A plain answer with no thought.',
    '<think>\nA call.\n<tool_call>\n{"name": "f", "arguments": {"x": 1}}\n</tool_call>',
  ];

  for (const name of REASONING_PARSER_NAMES) {
    for (const options of [{}, { chatTemplateKwargs: { enable_thinking: false, thinking: true } }]) {
      it(`${name} ${JSON.stringify(options)}: the deltas add up to the whole output's split`, () => {
        for (const text of outputs) {
          const ids = engine.tokenizer.encode(text, { addSpecialTokens: false });
          // The tags are single tokens here, as in the real models.
          if (text.includes('</think>')) expect(ids).toContain(engine.tokenizer.encode('</think>', { addSpecialTokens: false })[0]);
          const parser = REASONING_PARSERS[name].create(options);
          const stream = new ReasoningStream(parser, false);
          const detokenizer = new IncrementalDetokenizer(engine.tokenizer, { skipSpecialTokens: true, promptTokenIds: [] });
          const expected = readReasoning(parser, false, text);
          let reasoning = '';
          let content = '';
          ids.forEach((id, i) => {
            const piece = detokenizer.push(id) + (i === ids.length - 1 ? detokenizer.flush() : '');
            const delta = stream.push(piece, i === ids.length - 1);
            // The tag itself goes to neither part (unless the parser reads it all as content).
            if (!(expected.content ?? '').includes('</think>')) expect(delta.content ?? '').not.toContain('</think>');
            expect(delta.reasoning ?? '').not.toContain('</think>');
            reasoning += delta.reasoning ?? '';
            content += delta.content ?? '';
          });
          expect({ reasoning: reasoning || null, content: content || null }, text).toEqual(expected);
        }
      });
    }
  }

  it('holds back a tag split across steps until it is complete', () => {
    const stream = new ReasoningStream(REASONING_PARSERS.deepseek_r1.create({}), false);
    expect(stream.push('<th')).toEqual({});
    expect(stream.push('ink>I think')).toEqual({ reasoning: 'I think' });
    expect(stream.push('</thi')).toEqual({});
    expect(stream.push('nk>Done')).toEqual({ content: 'Done' });
    expect(stream.push('', true)).toEqual({});
  });
});
