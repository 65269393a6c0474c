import { describe, expect, it } from 'vitest';
import { parseJsonBody } from '../../src/protocol/json.js';
import { MindieGenerateRequestSchema } from '../../src/protocol/mindie.js';
import { ChatCompletionRequestSchema, CompletionRequestSchema } from '../../src/protocol/openai.js';
import {
  refuseUnsupported,
  unsupportedChatFeatures,
  unsupportedCompletionFeatures,
  unsupportedMindieFeatures,
} from '../../src/protocol/unsupported.js';
import { parseRequest } from '../../src/protocol/validate.js';
import { expectInvalidRequest } from './expect-error.js';

const completion = (extra = '') =>
  unsupportedCompletionFeatures(parseRequest(CompletionRequestSchema, parseJsonBody(`{"model": "m", "prompt": "hi"${extra}}`)));
const chat = (extra = '', messages = '[{"role": "user", "content": "hi"}]') =>
  unsupportedChatFeatures(parseRequest(ChatCompletionRequestSchema, parseJsonBody(`{"model": "m", "messages": ${messages}${extra}}`)));
const mindie = (body: string) => unsupportedMindieFeatures(parseRequest(MindieGenerateRequestSchema, parseJsonBody(body)));

const params = (features: { param: string }[]) => features.map((f) => f.param);

describe('features accepted by the schemas but not served yet', () => {
  it('finds nothing in plain requests', () => {
    expect(completion()).toEqual([]);
    expect(chat()).toEqual([]);
    expect(mindie('{"prompt": "hi", "n": 1, "best_of": null}')).toEqual([]);
    expect(completion(', "response_format": {"type": "text"}, "logit_bias": {}, "prompt": [1, 2, 3]')).toEqual([]);
    expect(chat(', "tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "none"')).toEqual([]);
  });

  it.each([
    [', "n": 2, "temperature": 1', ['n']],
    [', "best_of": 2', ['best_of']],
    [', "use_beam_search": true, "n": 2, "temperature": 0', ['n', 'use_beam_search']],
    [', "logit_bias": {"5": 10}', ['logit_bias']],
    [', "logprobs": 1', ['logprobs']],
    [', "prompt_logprobs": 0', ['prompt_logprobs']],
    [', "echo": true', ['echo']],
    [', "suffix": "x"', ['suffix']],
    [', "allowed_token_ids": [1]', ['allowed_token_ids']],
    [', "priority": 1', ['priority']],
  ])('completions%s', (extra, expected) => {
    expect(params(completion(extra))).toEqual(expected);
  });

  // Structured output is the serving layer's: it compiles the constraint and refuses, by
  // name, what it cannot serve (test/http/guided.test.ts). Listing it here would refuse it all.
  it('leaves structured output to the serving layer', () => {
    expect(completion(', "guided_json": {"type": "object"}')).toEqual([]);
    expect(completion(', "guided_regex": "a+", "guided_whitespace_pattern": "[ ]?"')).toEqual([]);
    expect(completion(', "guided_grammar": "root ::= x"')).toEqual([]);
    expect(chat(', "response_format": {"type": "json_object"}')).toEqual([]);
    expect(chat(', "guided_choice": ["a", "b"], "response_format": {"type": "text"}')).toEqual([]);
    expect(params(chat(', "response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": {}}}, "n": 2, "temperature": 1'))).toEqual(['n']);
  });

  it('flags a batch of prompts but not one token-id prompt', () => {
    expect(params(unsupportedCompletionFeatures(parseRequest(CompletionRequestSchema, { model: 'm', prompt: ['a', 'b'] })))).toEqual(['prompt']);
    expect(params(unsupportedCompletionFeatures(parseRequest(CompletionRequestSchema, { model: 'm', prompt: [[1], [2]] })))).toEqual(['prompt']);
  });

  it('flags chat tools that need a parser or guided decoding, and logprobs', () => {
    const tools = ', "tools": [{"type": "function", "function": {"name": "f"}}]';
    expect(params(chat(tools))).toEqual(['tool_choice']);
    expect(chat(tools)[0]!.message).toMatch(/"auto" tool choice/);
    expect(params(chat(`${tools}, "tool_choice": {"type": "function", "function": {"name": "f"}}`))).toEqual(['tool_choice']);
    expect(params(chat(', "logprobs": true, "top_logprobs": 2'))).toEqual(['logprobs']);
  });

  it('flags MindIE multi-sequence requests', () => {
    expect(params(mindie('{"prompt": "hi", "n": 2, "best_of": 2, "temperature": 0.5}'))).toEqual(['n', 'best_of']);
  });

  // Media is the serving layer's: it fetches and decodes each part, then refuses what the
  // model cannot take (test/http/media.test.ts). Refusing it here would skip those checks.
  it('leaves media parts to the serving layer', () => {
    const media = '[{"role": "user", "content": [{"type": "text", "text": "see"}, {"type": "image_url", "image_url": {"url": "x"}}]}]';
    expect(chat('', media)).toEqual([]);
    expect(chat(', "n": 2, "temperature": 1', media).map((f) => f.param)).toEqual(['n']);
    expect(mindie('{"prompt": [{"type": "text", "text": "a"}, {"type": "video_url", "video_url": "v.mp4"}]}')).toEqual([]);
    expect(params(mindie('{"prompt": [{"type": "audio_url", "audio_url": {"url": "a.wav"}}], "n": 2, "best_of": 2, "temperature": 1}'))).toEqual(['n', 'best_of']);
  });

  it('refuses the first feature as a 400 naming its parameter', () => {
    expect(() => refuseUnsupported([])).not.toThrow();
    const error = expectInvalidRequest(() => refuseUnsupported(completion(', "best_of": 2, "echo": true')));
    expect(error.param).toBe('best_of');
    expect(error.message).toMatch(/best_of/);
  });
});
