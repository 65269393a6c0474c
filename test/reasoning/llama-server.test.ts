/**
 * llama.cpp's server as the second reference: test/fixtures/reasoning/llama-server-deepseek.json
 * holds outputs of test/fixtures/gguf/tiny-qwen3.gguf served by llama-server (node-llama-cpp
 * 3.21.1's llama.cpp, `--jinja`, scripts/peer/llama_reasoning_reference.py), raw
 * (`reasoning_format: none`) and split (`reasoning_format: deepseek`). Our deepseek_r1 and
 * qwen3 parsers split a thought that `<think>` opens exactly as llama.cpp does; where an
 * output carries no `<think>`, llama.cpp (whose parser is derived from the template, which
 * does not open a thought for Qwen3) reads it as content, and vLLM, which this server
 * follows, as reasoning up to any `</think>`: those cases are asserted as the difference.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { REASONING_PARSERS } from '../../src/reasoning/index.js';
import { readReasoning } from '../../src/reasoning/reasoning-stream.js';

interface LlamaCase {
  name: string;
  output: string;
  reasoning_content: string | null;
  content: string;
}

const { cases }: { cases: LlamaCase[] } = JSON.parse(readFileSync(new URL('../fixtures/reasoning/llama-server-deepseek.json', import.meta.url), 'utf8'));
const byName = (name: string) => cases.find((entry) => entry.name === name)!;
const empty = (text: string | null) => (text === '' ? null : text);

describe('the reasoning split against llama-server --reasoning-format deepseek', () => {
  for (const name of ['closed thought', 'empty thought', 'unclosed thought']) {
    for (const parser of ['deepseek_r1', 'qwen3'] as const) {
      it(`${name}: ${parser} splits it as llama.cpp does`, () => {
        const reference = byName(name);
        expect(reference.output.startsWith('<think>')).toBe(true);
        const ours = readReasoning(REASONING_PARSERS[parser].create({}), false, reference.output);
        expect({ reasoning: ours.reasoning, content: ours.content }).toEqual({ reasoning: empty(reference.reasoning_content), content: empty(reference.content) });
      });
    }
  }

  it('no tag: llama.cpp says content; vLLM\'s deepseek_r1 (and qwen3 while thinking) an unfinished thought', () => {
    const reference = byName('no tag');
    expect(reference).toMatchObject({ reasoning_content: null, content: reference.output });
    expect(readReasoning(REASONING_PARSERS.deepseek_r1.create({}), false, reference.output)).toEqual({ reasoning: reference.output, content: null });
    // With thinking off, qwen3 agrees with llama.cpp.
    expect(readReasoning(REASONING_PARSERS.qwen3.create({ chatTemplateKwargs: { enable_thinking: false } }), false, reference.output)).toEqual({ reasoning: null, content: reference.output });
  });

  it('</think> without <think>: llama.cpp keeps it in the content; vLLM\'s deepseek_r1 ends an (empty) thought there', () => {
    const reference = byName('</think> without <think>');
    expect(reference.content).toBe(reference.output);
    expect(readReasoning(REASONING_PARSERS.deepseek_r1.create({}), false, reference.output)).toEqual({ reasoning: null, content: reference.output.slice('</think>'.length) });
  });
});
