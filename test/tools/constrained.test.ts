import { describe, expect, it } from 'vitest';
import { namedToolReader, requiredToolsReader, requiredToolsSchema } from '../../src/tools/constrained.js';
import { ToolChoiceError, effectiveToolChoice, toolCalling } from '../../src/tools/tool-choice.js';
import { expectSameStreamed, streamPieces } from './stream-helpers.js';

const tool = (name: string, parameters?: Record<string, unknown>) => ({ type: 'function' as const, function: { name, parameters } });

describe('tool_choice resolution', () => {
  const tools = [tool('f'), tool('g', { type: 'object', properties: { a: { type: 'integer' } } })];

  it('is "auto" with tools and no choice, "none" without tools (vLLM)', () => {
    expect(effectiveToolChoice({})).toBe('none');
    expect(effectiveToolChoice({ tools })).toBe('auto');
    expect(effectiveToolChoice({ tools, tool_choice: 'none' })).toBe('none');
    expect(toolCalling({ tools, tool_choice: 'none' }, 'hermes')).toBeNull();
  });

  it('constrains a named tool to its parameters and "required" to a list of calls', () => {
    const named = toolCalling({ tools, tool_choice: { type: 'function', function: { name: 'g' } } }, undefined)!;
    expect(named.schema).toEqual(tools[1]!.function.parameters);
    expect(named.finishReason).toBe('stop');
    const required = toolCalling({ tools, tool_choice: 'required' }, undefined)!;
    expect(required.schema).toEqual(requiredToolsSchema([tools[0]!.function, tools[1]!.function], true));
    expect(required.finishReason).toBe('tool_calls');
    expect(toolCalling({ tools, tool_choice: 'required', parallel_tool_calls: false }, undefined)!.schema).toMatchObject({ maxItems: 1 });
  });

  it('needs tools for "required" and a named tool; "auto" with an empty list is "none"', () => {
    expect(() => toolCalling({ tools: [], tool_choice: 'required' }, undefined)).toThrow('tool_choice "required" needs at least one tool in `tools`');
    expect(toolCalling({ tools: [], tool_choice: 'auto' }, undefined)).toBeNull();
  });

  it('needs a parser for "auto"', () => {
    expect(() => toolCalling({ tools }, undefined)).toThrow(ToolChoiceError);
    expect(toolCalling({ tools }, 'pythonic')!.schema).toBeUndefined();
  });
});

describe('"required" output', () => {
  it('reads each call of the list, the name first, argument fragments after', () => {
    const text = '[{"name":"get_time","parameters":{"zone":"UTC"}},{"name":"get_weather","parameters":{"city":"Paris","days":2}}]';
    expect(expectSameStreamed(requiredToolsReader, text)).toEqual({
      content: null,
      calls: [
        { name: 'get_time', arguments: '{"zone":"UTC"}' },
        { name: 'get_weather', arguments: '{"city":"Paris","days":2}' },
      ],
    });
    const streamed = streamPieces(requiredToolsReader, ['[{"name":"get', '_time","para', 'meters":{"zo', 'ne":"UTC"}}]']);
    expect(streamed.deltas[0]).toEqual({});
    expect(streamed.deltas[1]!.toolCalls).toEqual([{ index: 0, id: 'call-0', type: 'function', function: { name: 'get_time', arguments: '' } }]);
    expect(streamed.deltas[2]!.toolCalls).toEqual([{ index: 0, function: { arguments: '{"zo' } }]);
  });

  it('a named tool: the whole output is its arguments, announced before any token', () => {
    const streamed = streamPieces(namedToolReader('f'), ['', '{"a":', '1}']);
    expect(streamed.deltas[0]!.toolCalls).toEqual([{ index: 0, id: 'call-0', type: 'function', function: { name: 'f', arguments: '' } }]);
    expect(streamed.calls).toEqual([{ id: 'call-0', name: 'f', arguments: '{"a":1}' }]);
  });
});
