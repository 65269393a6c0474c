/**
 * The parsers read back exactly the calls the models' own chat templates render for an
 * assistant turn (the format the model was trained to write): test/fixtures/tools/
 * template-turns.json, rendered by scripts/tools/render_tool_call_turns.py with jinja2 from
 * llama.cpp's models/templates/ (DeepSeek R1, Kimi K2, Qwen 2.5, Qwen3, Qwen3-Coder and GLM-4.6,
 * whose XML parameters are typed back by the tools' schemas). For Qwen3's turn
 * the qwen3 reasoning parser goes first, as a server with both parsers reads it.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { REASONING_PARSERS } from '../../src/reasoning/index.js';
import { TOOL_CALL_PARSERS, type ToolCallParserName } from '../../src/tools/parsers/index.js';
import { parserReader } from '../../src/tools/tool-call-stream.js';
import { expectSameStreamed } from './stream-helpers.js';

interface Turn {
  template: string;
  parser: ToolCallParserName;
  turn: string;
  calls: Array<{ name: string; arguments: Record<string, unknown> }>;
  tools: Array<{ name: string; parameters?: Record<string, unknown> }>;
}

const turns: Turn[] = JSON.parse(readFileSync(new URL('../fixtures/tools/template-turns.json', import.meta.url), 'utf8'));

describe('tool calls as the chat templates write them', () => {
  it('has the templates it checks', () => {
    expect(new Set(turns.map((turn) => turn.parser))).toEqual(new Set(['deepseek_v3', 'kimi_k2', 'hermes', 'qwen3_coder', 'glm45']));
  });

  for (const turn of turns) {
    it(`${turn.parser} reads ${turn.template}'s assistant turn, streamed or not`, () => {
      let text = turn.turn;
      if (text.includes('</think>')) text = REASONING_PARSERS.qwen3.create({}).read(text.slice(text.indexOf('<think>')), true).content;
      const registered = TOOL_CALL_PARSERS[turn.parser];
      const parser = 'withTools' in registered && registered.withTools ? registered.withTools(turn.tools) : registered;
      const message = expectSameStreamed(parserReader(parser), text);
      expect(message.calls.map((call) => ({ name: call.name, arguments: JSON.parse(call.arguments) }))).toEqual(turn.calls);
    });
  }
});
