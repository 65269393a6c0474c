import { describe, expect, it } from 'vitest';
import { deepseekV3Parser } from '../../src/tools/parsers/deepseek-v3.js';
import { graniteParser } from '../../src/tools/parsers/granite.js';
import { hermesParser } from '../../src/tools/parsers/hermes.js';
import { kimiK2Parser } from '../../src/tools/parsers/kimi-k2.js';
import { llama3JsonParser } from '../../src/tools/parsers/llama3-json.js';
import { mistralParser } from '../../src/tools/parsers/mistral.js';
import { pythonicParser } from '../../src/tools/parsers/pythonic.js';
import { qwen3CoderParser } from '../../src/tools/parsers/qwen3-coder.js';
import { parserReader, readMessage } from '../../src/tools/tool-call-stream.js';
import { expectSameStreamed, streamPieces } from './stream-helpers.js';

const hermes = parserReader(hermesParser);
const llama3 = parserReader(llama3JsonParser);
const mistral = parserReader(mistralParser);
const pythonic = parserReader(pythonicParser);

// Outputs in the shapes these model families write (Hermes 3 / Qwen 2.5, Llama 3.1, Mistral 7B v0.3, Llama 3.2 pythonic).
const HERMES_TWO_CALLS =
  'Let me check both.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}\n</tool_call>\n<tool_call>\n{"name": "get_time", "arguments": {"zone": "Europe/Paris"}}\n</tool_call>';

describe('hermes', () => {
  it('reads two calls and the content before them, the same streamed char by char or token-like', () => {
    const message = expectSameStreamed(hermes, HERMES_TWO_CALLS);
    expect(message.content).toBe('Let me check both.\n');
    expect(message.calls).toEqual([
      { name: 'get_weather', arguments: '{"city": "Paris", "unit": "celsius"}' },
      { name: 'get_time', arguments: '{"zone": "Europe/Paris"}' },
    ]);
    for (const call of message.calls) expect(() => JSON.parse(call.arguments)).not.toThrow();
  });

  it('holds back a partial <tool_call> tag and never sends it as content', () => {
    const streamed = streamPieces(hermes, ['Sure', '.', ' <tool', '_ca', 'll>', '{"name": "f", ', '"arguments": {}}', '</tool_call>']);
    expect(streamed.deltas[2]).toEqual({ content: ' ' });
    expect(streamed.deltas[3]).toEqual({});
    expect(streamed.content).toBe('Sure. ');
    expect(streamed.calls.map((c) => [c.name, c.arguments])).toEqual([['f', '{}']]);
  });

  it('announces a call by name before its arguments, then sends argument fragments', () => {
    const streamed = streamPieces(hermes, ['<tool_call>{"name": "get_', 'weather", "argu', 'ments": {"ci', 'ty": "Pa', 'ris"}}</tool_call>']);
    expect(streamed.deltas[0]).toEqual({});
    expect(streamed.deltas[1]!.toolCalls).toEqual([{ index: 0, id: 'call-0', type: 'function', function: { name: 'get_weather', arguments: '' } }]);
    expect(streamed.deltas[2]!.toolCalls).toEqual([{ index: 0, function: { arguments: '{"ci' } }]);
    expect(streamed.calls[0]!.arguments).toBe('{"city": "Paris"}');
  });

  it('is plain content without a tag, and when the tag holds no JSON', () => {
    expect(expectSameStreamed(hermes, 'Paris is sunny today.')).toEqual({ content: 'Paris is sunny today.', calls: [] });
    expect(hermesParser.read('<tool_call>not json</tool_call>', true)).toEqual({ content: '<tool_call>not json</tool_call>', calls: [] });
  });

  it('reads arguments sent as a JSON-encoded string', () => {
    expect(hermesParser.read('<tool_call>{"name": "f", "arguments": "{\\"a\\": 1}"}</tool_call>', true).calls).toEqual([{ name: 'f', arguments: '{"a": 1}' }]);
  });

  it('a call cut by max_tokens keeps the arguments written so far', () => {
    expect(hermesParser.read('<tool_call>{"name": "f", "arguments": {"a": "b', true).calls).toEqual([{ name: 'f', arguments: '{"a": "b' }]);
  });
});

describe('llama3_json', () => {
  it('reads one call with "parameters", after <|python_tag|> or bare', () => {
    const text = '<|python_tag|>{"name": "get_weather", "parameters": {"city": "San Francisco", "days": 3}}';
    expect(expectSameStreamed(llama3, text)).toEqual({
      content: null,
      calls: [{ name: 'get_weather', arguments: '{"city": "San Francisco", "days": 3}' }],
    });
    expect(expectSameStreamed(llama3, '{"name": "get_time", "parameters": {}}').calls).toEqual([{ name: 'get_time', arguments: '{}' }]);
  });

  it('reads two calls separated by ";"', () => {
    const text = '{"name": "a", "parameters": {"x": [1, 2]}}; {"name": "b", "parameters": {"y": "z;w"}}';
    expect(expectSameStreamed(llama3, text).calls).toEqual([
      { name: 'a', arguments: '{"x": [1, 2]}' },
      { name: 'b', arguments: '{"y": "z;w"}' },
    ]);
  });

  it('is content when the output does not start with a call; a partial <|python_tag|> is held back', () => {
    expect(expectSameStreamed(llama3, 'The weather is nice.')).toEqual({ content: 'The weather is nice.', calls: [] });
    const streamed = streamPieces(llama3, ['<|py', 'thon_tag|>', '{"name": "f", "parameters": {"a": 1}}']);
    expect(streamed.deltas[0]).toEqual({});
    expect(streamed.content).toBe('');
    expect(streamed.calls.map((c) => [c.name, c.arguments])).toEqual([['f', '{"a": 1}']]);
  });
});

describe('mistral', () => {
  it('reads a [TOOL_CALLS] list of two calls and the content before it', () => {
    const text = 'Checking.[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Lyon"}}, {"name": "get_time", "arguments": {"zone": "CET"}}]';
    expect(expectSameStreamed(mistral, text)).toEqual({
      content: 'Checking.',
      calls: [
        { name: 'get_weather', arguments: '{"city": "Lyon"}' },
        { name: 'get_time', arguments: '{"zone": "CET"}' },
      ],
    });
  });

  it('reads the v11 form name[ARGS]{...}, one [TOOL_CALLS] per call', () => {
    const text = '[TOOL_CALLS]get_weather[ARGS]{"city": "Lyon"}[TOOL_CALLS]get_time[ARGS]{"zone": "CET"}';
    expect(expectSameStreamed(mistral, text).calls).toEqual([
      { name: 'get_weather', arguments: '{"city": "Lyon"}' },
      { name: 'get_time', arguments: '{"zone": "CET"}' },
    ]);
  });

  it('holds back a partial [TOOL_CALLS] tag, and gives 9-character alphanumeric call ids', () => {
    const streamed = streamPieces(mistral, ['Hi', ' [TOOL', '_CALLS]', '[{"name": "f", "arguments": {}}]']);
    expect(streamed.deltas[1]).toEqual({ content: ' ' });
    expect(streamed.content).toBe('Hi ');
    expect(mistralParser.newCallId!()).toMatch(/^[A-Za-z0-9]{9}$/);
  });
});

describe('pythonic', () => {
  it('reads two calls with Python literals as JSON arguments', () => {
    const text = '[get_weather(city="San Francisco", metric=\'celsius\', days=3), search(query="a, b", filters={"lang": "en", "safe": True}, tags=["x", None], ratio=-0.5)]';
    expect(expectSameStreamed(pythonic, text)).toEqual({
      content: null,
      calls: [
        { name: 'get_weather', arguments: '{"city":"San Francisco","metric":"celsius","days":3}' },
        { name: 'search', arguments: '{"query":"a, b","filters":{"lang":"en","safe":true},"tags":["x",null],"ratio":-0.5}' },
      ],
    });
  });

  it('announces a call at "name(" and sends its arguments once its ")" is read', () => {
    const streamed = streamPieces(pythonic, ['[get_', 'weather(', 'city="Pa', 'ris")', ', get_time()', ']']);
    expect(streamed.deltas[0]).toEqual({});
    expect(streamed.deltas[1]!.toolCalls).toEqual([{ index: 0, id: 'call-0', type: 'function', function: { name: 'get_weather', arguments: '' } }]);
    expect(streamed.deltas[2]).toEqual({});
    expect(streamed.deltas[3]!.toolCalls).toEqual([{ index: 0, function: { arguments: '{"city":"Paris"}' } }]);
    expect(streamed.calls.map((c) => [c.name, c.arguments])).toEqual([['get_weather', '{"city":"Paris"}'], ['get_time', '{}']]);
  });

  it('reads the Llama 4 <|python_start|> ... <|python_end|> wrapping', () => {
    expect(expectSameStreamed(pythonic, '<|python_start|>[f(a=1)]<|python_end|>').calls).toEqual([{ name: 'f', arguments: '{"a":1}' }]);
  });

  it('is content when the output is not a list of calls', () => {
    expect(expectSameStreamed(pythonic, 'It is sunny.')).toEqual({ content: 'It is sunny.', calls: [] });
    expect(pythonicParser.read('[1, 2, 3]', true)).toEqual({ content: '[1, 2, 3]', calls: [] });
  });
});

// vLLM's deepseek_v3, kimi_k2 and granite formats, as DeepSeek V3/R1's, Kimi K2's and
// Granite 3.x's chat templates render an assistant's calls (and the models write them).
describe('deepseek_v3', () => {
  const deepseek = parserReader(deepseekV3Parser);
  const call = (name: string, args: string) => `<｜tool▁call▁begin｜>function<｜tool▁sep｜>${name}\n\`\`\`json\n${args}\n\`\`\`<｜tool▁call▁end｜>`;
  const TWO = `Checking.<｜tool▁calls▁begin｜>${call('get_weather', '{"city": "Paris"}')}\n${call('get_time', '{"zone": "CET"}')}<｜tool▁calls▁end｜>`;

  it('reads the calls of the section and the content before it, the same streamed', () => {
    const message = expectSameStreamed(deepseek, TWO);
    expect(message.content).toBe('Checking.');
    expect(message.calls).toEqual([
      { name: 'get_weather', arguments: '{"city": "Paris"}' },
      { name: 'get_time', arguments: '{"zone": "CET"}' },
    ]);
  });

  it('is content without the section marker, or when the section holds no call', () => {
    expect(expectSameStreamed(deepseek, 'Plain text.')).toEqual({ content: 'Plain text.', calls: [] });
    const broken = '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\nnot a fence';
    expect(deepseekV3Parser.read(broken, true)).toEqual({ content: broken, calls: [] });
  });
});

describe('kimi_k2', () => {
  const kimi = parserReader(kimiK2Parser);
  const TWO =
    'Let me look.<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|>' +
    '<|tool_call_begin|>functions.get_time:1<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>';

  it('reads the calls with their ids, and the content before the section, the same streamed', () => {
    const message = expectSameStreamed(kimi, TWO);
    expect(message.content).toBe('Let me look.');
    expect(message.calls).toEqual([
      { name: 'get_weather', arguments: '{"city": "Paris"}' },
      { name: 'get_time', arguments: '{}' },
    ]);
    // The id is the model's own "functions.name:index", which its template writes back.
    expect(readMessage(kimi, TWO).toolCalls.map((c) => c.id)).toEqual(['functions.get_weather:0', 'functions.get_time:1']);
    expect(streamPieces(kimi, [...TWO]).calls.map((c) => c.id)).toEqual(['functions.get_weather:0', 'functions.get_time:1']);
  });

  it('accepts the singular section marker and a bare name:index id', () => {
    const text = '<|tool_call_section_begin|><|tool_call_begin|>search:0<|tool_call_argument_begin|>{"q": "x"}<|tool_call_end|><|tool_call_section_end|>';
    expect(kimiK2Parser.read(text, true)).toEqual({ content: '', calls: [{ id: 'search:0', name: 'search', arguments: '{"q": "x"}' }] });
  });
});

describe('granite', () => {
  const granite = parserReader(graniteParser);

  it('reads a list after <|tool_call|> (3.0), <tool_call> (3.1+) or bare, the same streamed; no content beside calls', () => {
    for (const tag of ['<|tool_call|>', '<tool_call>', '']) {
      const message = expectSameStreamed(granite, `${tag}[{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_time", "arguments": {}}]`);
      expect(message).toEqual({
        content: null,
        calls: [
          { name: 'get_weather', arguments: '{"city": "Paris"}' },
          { name: 'get_time', arguments: '{}' },
        ],
      });
    }
  });

  it('is content when the output does not open with a call list', () => {
    expect(expectSameStreamed(granite, 'The weather in Paris is sunny.')).toEqual({ content: 'The weather in Paris is sunny.', calls: [] });
    expect(expectSameStreamed(granite, '[1, 2] are numbers.')).toEqual({ content: '[1, 2] are numbers.', calls: [] });
  });
});

describe('qwen3_coder', () => {
  const tools = [
    {
      name: 'search',
      parameters: {
        type: 'object',
        properties: { query: { type: 'string' }, limit: { type: 'integer' }, score: { type: 'number' }, exact: { type: 'boolean' }, filters: { type: 'object' }, tags: { type: 'array' } },
      },
    },
  ];
  const parser = qwen3CoderParser.withTools!(tools);
  const coder = parserReader(parser);
  const param = (key: string, value: string) => `<parameter=${key}>\n${value}\n</parameter>\n`;

  it('types each parameter by the tool\'s schema, as vLLM\'s _convert_param_value, and writes Python\'s JSON', () => {
    const text =
      'I will search.\n<tool_call>\n<function=search>\n' +
      param('query', '42') + param('limit', '10') + param('score', '0.5') + param('exact', 'True') +
      param('filters', '{"lang":"en","year":2024}') + param('tags', '["a","b"]') + param('other', '7') + param('missing', 'null') +
      '</function>\n</tool_call>';
    const message = expectSameStreamed(coder, text);
    expect(message.content).toBe('I will search.\n');
    expect(message.calls).toEqual([
      {
        name: 'search',
        arguments: '{"query": "42", "limit": 10, "score": 0.5, "exact": true, "filters": {"lang": "en", "year": 2024}, "tags": ["a", "b"], "other": "7", "missing": null}',
      },
    ]);
  });

  it('streams parameter by parameter: the arguments so far are a prefix of the final ones', () => {
    const streamed = streamPieces(coder, ['<tool_call>\n<function=search>\n', param('query', 'cats'), param('limit', '3'), '</function>\n</tool_call>']);
    expect(streamed.deltas[0]!.toolCalls).toEqual([{ index: 0, id: 'call-0', type: 'function', function: { name: 'search', arguments: '' } }]);
    expect(streamed.deltas[1]!.toolCalls).toEqual([{ index: 0, function: { arguments: '{"query": "cats"' } }]);
    expect(streamed.deltas[2]!.toolCalls).toEqual([{ index: 0, function: { arguments: ', "limit": 3' } }]);
    expect(streamed.calls[0]!.arguments).toBe('{"query": "cats", "limit": 3}');
  });

  it('is content without a call', () => {
    expect(expectSameStreamed(coder, 'No tools needed: <b>bold</b>.')).toEqual({ content: 'No tools needed: <b>bold</b>.', calls: [] });
  });
});
