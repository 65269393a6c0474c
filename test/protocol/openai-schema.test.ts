import { describe, expect, it } from 'vitest';
import { parseJsonBody } from '../../src/protocol/json.js';
import {
  ChatCompletionRequestSchema,
  CompletionRequestSchema,
  completionPrompts,
  guidedDecodingFields,
  messageText,
  requestedChatMaxTokens,
  type ChatCompletionRequest,
  type CompletionRequest,
} from '../../src/protocol/openai.js';
import { parseRequest } from '../../src/protocol/validate.js';
import { expectInvalidRequest } from './expect-error.js';

const COMPLETION_BASE = '"model": "m", "prompt": "hi"';
const CHAT_BASE = '"model": "m", "messages": [{"role": "user", "content": "hi"}]';

function completion(extra = ''): CompletionRequest {
  return parseRequest(CompletionRequestSchema, parseJsonBody(`{${COMPLETION_BASE}${extra ? `, ${extra}` : ''}}`));
}
function chat(extra = ''): ChatCompletionRequest {
  return parseRequest(ChatCompletionRequestSchema, parseJsonBody(`{${CHAT_BASE}${extra ? `, ${extra}` : ''}}`));
}
function chatWith(body: string): ChatCompletionRequest {
  return parseRequest(ChatCompletionRequestSchema, parseJsonBody(body));
}

/** Parameters shared by both endpoints: [param, inside, outside] as JSON literals. */
const COMMON: [string, string[], string[]][] = [
  ['max_tokens', ['1', '100000', 'null', '"16"'], ['0', '-1', '1.5', '"1.5"', '"x"']],
  ['temperature', ['0', '0.0', '2.0', '5', '"1"'], ['-0.000001', '-1', '"-1"', '"warm"']],
  ['top_p', ['1.0', '0.000000001', '0.5'], ['0', '0.0', '1.0000001', '-0.1']],
  ['top_k', ['-1', '0', '1', '1000', '"5"'], ['-2', '1.5', '"five"']],
  ['min_p', ['0', '1', '0.05'], ['-0.000001', '1.000001']],
  ['presence_penalty', ['-2', '2'], ['-2.000001', '2.000001']],
  ['frequency_penalty', ['-2', '2'], ['-2.000001', '2.000001']],
  ['repetition_penalty', ['0.000001', '1', '5'], ['0', '-1']],
  ['n', ['1'], ['0', '-1', '1.5']],
  ['best_of', ['1', '3'], ['0', '1.5']],
  ['seed', ['-9223372036854775808', '9223372036854775807', '0', '-1'], ['-9223372036854775809', '9223372036854775808', '1.5', '"seven"']],
  ['stop', ['"a"', '["a", "b"]', '[]', 'null'], ['""', '["a", ""]', '5', '[1]']],
  ['stop_token_ids', ['[1, 2]', '[]'], ['[1.5]', '"1"', '[18446744073709551615]']],
  ['min_tokens', ['0', '1'], ['-1', '0.5']],
  ['stream', ['true', 'false', '"true"', '1'], ['"x"', '2']],
  ['use_beam_search', ['true', 'false', '"yes"'], ['"maybe"']],
  ['length_penalty', ['1.0', '-3', '0.5', '"1"'], ['"one"']],
  ['early_stopping', ['true', 'false', '"never"', '1'], ['"always"', '2']],
  ['include_stop_str_in_output', ['true'], ['"x"']],
  ['ignore_eos', ['true'], ['"x"']],
  ['skip_special_tokens', ['false'], ['"x"']],
  ['spaces_between_special_tokens', ['false'], ['"x"']],
  ['truncate_prompt_tokens', ['1', '500'], ['0', '-5']],
  ['prompt_logprobs', ['0', '5'], ['-1']],
  ['logit_bias', ['{"1": 2.5, "-1": -100, "2": 100}', '{}', '{"1": 100.5}', '{"1": -101}'], ['{"a": 1}', '{"1": "x"}', '[1]']],
  ['user', ['"someone"'], ['5']],
  ['stream_options', ['null'], ['5', '"x"']],
  ['response_format', ['{"type": "text"}', '{"type": "json_object"}', '{"type": "json_schema", "json_schema": {"name": "x", "schema": {}}}'], ['{"type": "xml"}', '"json"', '{"type": "json_schema", "json_schema": {}}']],
  ['guided_json', ['{"type": "object"}', '"{}"'], ['5', '[1]']],
  ['guided_regex', ['"a+"'], ['5']],
  ['guided_choice', ['["a", "b"]'], ['"a"', '[1]']],
  ['guided_grammar', ['"root ::= x"'], ['5']],
  ['priority', ['0', '-3'], ['1.5', '"high"']],
];

const COMPLETION_ONLY: [string, string[], string[]][] = [
  ['prompt', ['""', '"hi"', '["a", "b"]', '[1, 2]', '[[1], [2, 3]]'], ['[]', '[-1]', '[[]]', '[[1], 2]', '["a", 1]', '5', '{}', 'null', '[1.5]', '[18446744073709551615]']],
  ['echo', ['true', 'false', '"yes"'], ['"x"']],
  ['logprobs', ['0', '5', 'null'], ['-1', 'true', '1.5']],
  ['suffix', ['"end"'], ['5']],
  ['allowed_token_ids', ['[0, 5]'], ['[-1]', '5']],
  ['add_special_tokens', ['false'], ['"x"']],
  ['model', ['"m"'], ['5', 'null']],
];

const CHAT_ONLY: [string, string[], string[]][] = [
  ['logprobs', ['true', 'false'], ['5', '"x"']],
  ['max_completion_tokens', ['1', 'null'], ['0', '1.5']],
  ['add_generation_prompt', ['true', 'false'], ['"x"']],
  ['continue_final_message', ['false'], ['"x"']],
  ['add_special_tokens', ['true'], ['"x"']],
  ['echo', ['true'], ['"x"']],
  ['documents', ['[{"title": "a", "text": "b"}]', '[]'], ['[{"a": 1}]', '{"a": "b"}']],
  ['chat_template', ['"{{ messages }}"'], ['5']],
  ['chat_template_kwargs', ['{"enable_thinking": false}'], ['[]', '"x"']],
  ['tools', ['[{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]'], ['[{"type": "function"}]', '{"a": 1}', '[{"type": "retrieval", "function": {"name": "f"}}]']],
  ['parallel_tool_calls', ['true'], ['"x"']],
  ['model', ['"m"'], ['5', 'null']],
];

function boundaryTable(label: string, table: [string, string[], string[]][], parse: (extra: string) => unknown) {
  describe(label, () => {
    for (const [param, inside, outside] of table) {
      describe(param, () => {
        it.each(inside)('accepts %s', (literal) => {
          expect(() => parse(`"${param}": ${literal}`)).not.toThrow();
        });
        it.each(outside)('refuses %s, naming the parameter', (literal) => {
          const error = expectInvalidRequest(() => parse(`"${param}": ${literal}`));
          expect(error.param?.startsWith(param)).toBe(true);
          expect(error.message).toContain(param);
          expect(error.message).not.toMatch(/zod|ZodError|\n\s+at /);
        });
      });
    }
  });
}

const completionWithParam = (extra: string) => {
  // The base body leaves out the parameter under test.
  const base = extra.startsWith('"prompt"') ? '"model": "m"' : extra.startsWith('"model"') ? '"prompt": "hi"' : COMPLETION_BASE;
  return parseRequest(CompletionRequestSchema, parseJsonBody(`{${base}, ${extra}}`));
};
const chatWithParam = (extra: string) => {
  const base = extra.startsWith('"model"') ? '"messages": [{"role": "user", "content": "hi"}]' : CHAT_BASE;
  return parseRequest(ChatCompletionRequestSchema, parseJsonBody(`{${base}, ${extra}}`));
};

boundaryTable('/v1/completions: every shared parameter at its boundaries', COMMON, completionWithParam);
boundaryTable('/v1/completions: completion-only parameters', COMPLETION_ONLY, completionWithParam);
boundaryTable('/v1/chat/completions: every shared parameter at its boundaries', COMMON, chatWithParam);
boundaryTable('/v1/chat/completions: chat-only parameters', CHAT_ONLY, chatWithParam);

describe('OpenAI requests: required fields and defaults', () => {
  it('requires model and prompt / messages', () => {
    expect(expectInvalidRequest(() => parseRequest(CompletionRequestSchema, { prompt: 'x' })).message).toBe('model is required');
    expect(expectInvalidRequest(() => parseRequest(CompletionRequestSchema, { model: 'm' })).message).toBe('prompt is required');
    expect(expectInvalidRequest(() => parseRequest(ChatCompletionRequestSchema, { model: 'm' })).message).toBe('messages is required');
  });

  it('applies the spec table\'s defaults and leaves model-dependent knobs unset', () => {
    const req = completion();
    expect(req).toMatchObject({
      n: 1,
      stream: false,
      use_beam_search: false,
      length_penalty: 1,
      stop: [],
      ignore_eos: false,
      skip_special_tokens: true,
      min_tokens: 0,
      echo: false,
      add_special_tokens: true,
    });
    // Defaults for these come from generation_config, then the constants (sampling-params.ts).
    expect(req.temperature).toBeUndefined();
    expect(req.top_k).toBeUndefined();
    expect(req.top_p).toBeUndefined();
    expect(req.max_tokens).toBeUndefined();
    const c = chat();
    expect(c).toMatchObject({ add_generation_prompt: true, continue_final_message: false, add_special_tokens: false, logprobs: false });
  });

  it('sets stream_options defaults as vLLM does', () => {
    expect(completion('"stream": true, "stream_options": {}').stream_options).toEqual({ include_usage: true, continuous_usage_stats: false });
    expect(chat('"stream": true, "stream_options": {"continuous_usage_stats": true}').stream_options).toEqual({
      include_usage: true,
      continuous_usage_stats: true,
    });
  });

  it('keeps int64 seeds exact', () => {
    expect(completion('"seed": 9223372036854775807').seed).toBe(2n ** 63n - 1n);
    expect(completion('"seed": -9223372036854775808').seed).toBe(-(2n ** 63n));
    expect(completion('"seed": 9007199254740993').seed).toBe(2n ** 53n + 1n);
  });

  it('normalises stop to a list', () => {
    expect(completion('"stop": "\\n"').stop).toEqual(['\n']);
    expect(chat('"stop": ["a", "b"]').stop).toEqual(['a', 'b']);
    expect(chat('"stop": null').stop).toEqual([]);
  });

  it('ignores unknown fields, like vLLM', () => {
    expect(completion('"metadata": {"x": 1}, "store": true')).not.toHaveProperty('metadata');
  });
});

describe('OpenAI requests: vLLM cross-field rules', () => {
  const rules: [string, () => unknown, string, RegExp][] = [
    ['best_of < n', () => completion('"n": 3, "best_of": 2'), 'best_of', /best_of must be greater than or equal to n, got n=3 and best_of=2/],
    ['stream_options without stream', () => chat('"stream_options": {"include_usage": true}'), 'stream_options', /only be defined when `stream=True`/],
    ['two kinds of guided decoding', () => completion('"guided_json": {}, "guided_choice": ["a"]'), 'guided_choice', /only use one kind of guided decoding/],
    ['prompt_logprobs while streaming', () => completion('"stream": true, "prompt_logprobs": 1'), 'prompt_logprobs', /not available when `stream=True`/],
    ['continue_final_message with add_generation_prompt', () => chat('"continue_final_message": true, "add_generation_prompt": true'), 'continue_final_message', /Cannot set both `continue_final_message` and `add_generation_prompt` to True/],
    ['continue_final_message with the default add_generation_prompt', () => chat('"continue_final_message": true'), 'continue_final_message', /Cannot set both/],
    ['top_logprobs without logprobs', () => chat('"top_logprobs": 3'), 'top_logprobs', /`logprobs` must be set to true/],
    ['tool_choice without tools', () => chat('"tool_choice": "auto"'), 'tool_choice', /`tools` must be set/],
    ['named tool_choice not among tools', () => chat('"tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": {"type": "function", "function": {"name": "g"}}'), 'tool_choice', /does not match any of the specified `tools`/],
    ['tool_choice of an unknown kind', () => chat('"tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "any"'), 'tool_choice', /must be "none", "auto", "required" or a named tool/],
  ];
  it.each(rules)('refuses %s', (_name, run, param, pattern) => {
    const error = expectInvalidRequest(run);
    expect(error.param).toBe(param);
    expect(error.message).toMatch(pattern);
  });

  it('accepts the valid combinations of the same fields', () => {
    expect(() => completion('"n": 2, "best_of": 2')).not.toThrow();
    expect(() => chat('"stream": true, "stream_options": {"include_usage": false}')).not.toThrow();
    expect(() => chat('"continue_final_message": true, "add_generation_prompt": false')).not.toThrow();
    expect(() => chat('"logprobs": true, "top_logprobs": 3')).not.toThrow();
    expect(() => chat('"tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": {"type": "function", "function": {"name": "f"}}')).not.toThrow();
    expect(() => chat('"tool_choice": "none"')).not.toThrow();
  });
});

describe('chat messages', () => {
  const msg = (messages: string) => chatWith(`{"model": "m", "messages": ${messages}}`);

  it('accepts every role and content form', () => {
    const req = msg(`[
      {"role": "system", "content": "s"},
      {"role": "developer", "content": [{"type": "text", "text": "d"}]},
      {"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "http://x/y.png", "detail": "low"}},
        {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}, {"type": "audio_url", "audio_url": {"url": "a.mp3"}},
        {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "mp3"}}, {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "flac"}},
        {"type": "video_url", "video_url": {"url": "v.mp4"}}]},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
      {"role": "tool", "content": "42", "tool_call_id": "c1"},
      {"role": "assistant", "content": "done", "reasoning_content": "kept for templates"}
    ]`);
    expect(req.messages.map((m) => m.role)).toEqual(['system', 'developer', 'user', 'assistant', 'tool', 'assistant']);
    expect(req.messages[5]).toHaveProperty('reasoning_content', 'kept for templates');
    expect(messageText(req.messages[2]!)).toBe('look');
    expect(messageText(req.messages[3]!)).toBe('');
  });

  const bad: [string, string, string][] = [
    ['empty list', '[]', 'messages'],
    ['not a list', '"hi"', 'messages'],
    ['unknown role', '[{"role": "robot", "content": "x"}]', 'messages[0].role'],
    ['user without content', '[{"role": "user"}]', 'messages[0].content'],
    ['numeric content', '[{"role": "user", "content": 5}]', 'messages[0].content'],
    ['unknown part type', '[{"role": "user", "content": [{"type": "hologram"}]}]', 'messages[0].content[0].type'],
    ['text part without text', '[{"role": "user", "content": [{"type": "text"}]}]', 'messages[0].content[0].text'],
    ['image part without url', '[{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]', 'messages[0].content[0].image_url.url'],
    ['audio of an unknown format', '[{"role": "user", "content": [{"type": "input_audio", "input_audio": {"data": "x", "format": "ogg"}}]}]', 'messages[0].content[0].input_audio.format'],
    ['second message bad', '[{"role": "user", "content": "x"}, {"role": "assistant", "content": 3}]', 'messages[1].content'],
  ];
  it.each(bad)('refuses %s, naming the exact path', (_name, messages, param) => {
    const error = expectInvalidRequest(() => msg(messages));
    expect(error.param).toBe(param);
    expect(error.message.startsWith(param)).toBe(true);
  });

  it('lists the accepted input_audio formats, flac included', () => {
    const error = expectInvalidRequest(() => msg('[{"role": "user", "content": [{"type": "input_audio", "input_audio": {"data": "x", "format": "ogg"}}]}]'));
    expect(error.message).toMatch(/^messages\[0\]\.content\[0\]\.input_audio\.format must be "wav", "mp3" or "flac"/);
  });
});

describe('helpers for the serving layer', () => {
  it('splits completion prompts', () => {
    expect(completionPrompts('a')).toEqual([{ text: 'a' }]);
    expect(completionPrompts(['a', 'b'])).toEqual([{ text: 'a' }, { text: 'b' }]);
    expect(completionPrompts([1, 2])).toEqual([{ tokenIds: [1, 2] }]);
    expect(completionPrompts([[1], [2, 3]])).toEqual([{ tokenIds: [1] }, { tokenIds: [2, 3] }]);
  });

  it('resolves the chat max_tokens that was asked for', () => {
    expect(requestedChatMaxTokens(chat())).toBeUndefined();
    expect(requestedChatMaxTokens(chat('"max_tokens": 5'))).toBe(5);
    expect(requestedChatMaxTokens(chat('"max_tokens": 5, "max_completion_tokens": 7'))).toBe(7);
    expect(requestedChatMaxTokens(chat('"max_tokens": null'))).toBeNull();
    expect(requestedChatMaxTokens(chat('"max_tokens": 5, "max_completion_tokens": null'))).toBe(5);
  });

  it('lists guided-decoding fields', () => {
    expect(guidedDecodingFields(completion())).toEqual([]);
    expect(guidedDecodingFields(completion('"response_format": {"type": "text"}'))).toEqual([]);
    expect(guidedDecodingFields(completion('"guided_json": {"type": "object"}'))).toEqual(['guided_json']);
    expect(guidedDecodingFields(chat('"guided_grammar": "g", "response_format": {"type": "json_object"}'))).toEqual([
      'guided_grammar',
      'response_format',
    ]);
  });
});

describe('lenient scalars (pydantic lax mode, as vLLM reads them)', () => {
  it('reads numeric strings as numbers and "true"/"yes"/1-style values as booleans', () => {
    const request = chat('"n": "2", "temperature": " 0.5 ", "top_k": "40", "stream": "false", "logprobs": "true", "top_logprobs": "3", "echo": 0, "seed": "9007199254740993"');
    expect(request).toMatchObject({ n: 2, temperature: 0.5, top_k: 40, stream: false, logprobs: true, top_logprobs: 3, echo: false });
    expect(request.seed).toBe(9007199254740993n);
    expect(completion('"max_tokens": "16", "logprobs": "2", "echo": "yes"')).toMatchObject({ max_tokens: 16, logprobs: 2, echo: true });
    expect(completion('"logit_bias": {"5": "-2.5"}').logit_bias).toEqual(new Map([[5, -2.5]]));
    // vLLM clamps a bias to OpenAI's [-100, 100] rather than refusing it.
    expect(completion('"logit_bias": {"5": 250, "6": -1e9, "7": "-100.5"}').logit_bias).toEqual(new Map([[5, 100], [6, -100], [7, -100]]));
  });

  it('still refuses what no lax reading makes valid, with the strict message', () => {
    expect(() => chat('"n": "two"')).toThrow('n must be an integer >= 1, got "two"');
    expect(() => chat('"n": "1.5"')).toThrow(/n must be an integer/);
    expect(() => chat('"stream": "maybe"')).toThrow(/stream must be true or false/);
    // Strings are not made from numbers.
    expect(() => chat('"user": 5')).toThrow(/user must be a string/);
  });
});
