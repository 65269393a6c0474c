import { describe, expect, it } from 'vitest';
import { parseJsonBody } from '../../src/protocol/json.js';
import { MindieGenerateRequestSchema } from '../../src/protocol/mindie.js';
import { ChatCompletionRequestSchema, CompletionRequestSchema } from '../../src/protocol/openai.js';
import {
  refuseUnsupported,
  unsupportedChatFeatures,
  unsupportedCompletionFeatures,
  unsupportedByEngine,
  unsupportedMindieFeatures,
} from '../../src/protocol/unsupported.js';
import { defaultSamplingParams } from '../../src/sampling/params.js';
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
    expect(chat(', "response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": {}}}, "n": 2, "temperature": 1')).toEqual([]);
  });

  it('serves several sequences, beam search and logprobs', () => {
    expect(completion(', "n": 2, "best_of": 3, "temperature": 1')).toEqual([]);
    expect(completion(', "use_beam_search": true, "n": 2, "temperature": 0, "length_penalty": 0.5')).toEqual([]);
    expect(completion(', "logprobs": 1, "echo": true, "prompt_logprobs": 0')).toEqual([]);
    expect(chat(', "logprobs": true, "top_logprobs": 2, "prompt_logprobs": 1, "n": 3, "temperature": 1')).toEqual([]);
    expect(mindie('{"prompt": "hi", "n": 2, "best_of": 2, "temperature": 0.5}')).toEqual([]);
  });

  it('leaves a batch of prompts to the serving layer (test/http/multi-prompt.test.ts)', () => {
    expect(params(unsupportedCompletionFeatures(parseRequest(CompletionRequestSchema, { model: 'm', prompt: ['a', 'b'] })))).toEqual([]);
    expect(params(unsupportedCompletionFeatures(parseRequest(CompletionRequestSchema, { model: 'm', prompt: [[1], [2]] })))).toEqual([]);
  });

  it('leaves tool calling (src/tools) and chat echo to the serving layer', () => {
    const tools = ', "tools": [{"type": "function", "function": {"name": "f"}}]';
    expect(params(chat(tools))).toEqual([]);
    expect(params(chat(`${tools}, "tool_choice": {"type": "function", "function": {"name": "f"}}`))).toEqual([]);
    expect(params(chat(', "echo": true'))).toEqual([]);
  });

  // Media is the serving layer's: it fetches and decodes each part, then refuses what the
  // model cannot take (test/http/media.test.ts). Refusing it here would skip those checks.
  it('leaves media parts to the serving layer', () => {
    const media = '[{"role": "user", "content": [{"type": "text", "text": "see"}, {"type": "image_url", "image_url": {"url": "x"}}]}]';
    expect(chat('', media)).toEqual([]);
    expect(chat(', "priority": 1', media).map((f) => f.param)).toEqual(['priority']);
    expect(mindie('{"prompt": [{"type": "text", "text": "a"}, {"type": "video_url", "video_url": "v.mp4"}]}')).toEqual([]);
    expect(mindie('{"prompt": [{"type": "audio_url", "audio_url": {"url": "a.wav"}}], "n": 2, "best_of": 2, "temperature": 1}')).toEqual([]);
  });

  it('lists what the resolved parameters ask of an engine that does not declare it', () => {
    const base = defaultSamplingParams({ n: 1, bestOf: 1 });
    const all = { multipleSequences: true, beamSearch: true, logprobs: true };
    const asked = { ...base, n: 2, bestOf: 3, logprobs: 0, promptLogprobs: 1 };
    expect(unsupportedByEngine(base, undefined)).toEqual([]);
    expect(unsupportedByEngine(asked, all)).toEqual([]);
    expect(params(unsupportedByEngine(asked, undefined))).toEqual(['n', 'best_of', 'logprobs', 'prompt_logprobs']);
    expect(params(unsupportedByEngine({ ...asked, useBeamSearch: true }, { ...all, beamSearch: false }))).toEqual(['use_beam_search']);
    expect(params(unsupportedByEngine(asked, { ...all, logprobs: false }))).toEqual(['logprobs', 'prompt_logprobs']);
  });

  it('refuses the first feature as a 400 naming its parameter', () => {
    expect(() => refuseUnsupported([])).not.toThrow();
    const error = expectInvalidRequest(() => refuseUnsupported(completion(', "suffix": "x", "allowed_token_ids": [1]')));
    expect(error.param).toBe('suffix');
    expect(error.message).toMatch(/suffix/);
  });
});
