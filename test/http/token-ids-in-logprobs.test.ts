/**
 * vLLM's return_tokens_as_token_ids: the generated tokens in logprobs (and their
 * alternatives) are named "token_id:<id>" (vLLM's serving code: f"token_id:{token_id}"),
 * so a client can send a reply back as token ids (a chat's history). The ids are those the
 * text decodes from, on completions (streamed and not) and chat.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/engine/types.js';
import { MODEL, golden, loadEngine, postJson, testApp } from './helpers.js';

let engine: Engine;
beforeAll(async () => {
  engine = await loadEngine();
});
afterAll(() => engine.dispose());

const idsOf = (tokens: string[]) =>
  tokens.map((token) => {
    expect(token).toMatch(/^token_id:\d+$/);
    return Number(token.slice('token_id:'.length));
  });

describe('return_tokens_as_token_ids', () => {
  it('names a completion\'s tokens and alternatives by id; the ids decode to its text', async () => {
    const body = { model: MODEL, prompt: golden.prompt, temperature: 0, max_tokens: 12, logprobs: 2, return_tokens_as_token_ids: true };
    const response = await postJson(testApp(engine), '/v1/completions', body);
    expect(response.status).toBe(200);
    const choice = (await response.json()).choices[0];
    const ids = idsOf(choice.logprobs.tokens);
    expect(ids).toHaveLength(12);
    expect(engine.tokenizer.decode(ids, { skipSpecialTokens: true })).toBe(choice.text);
    for (const top of choice.logprobs.top_logprobs) for (const name of Object.keys(top)) expect(name).toMatch(/^token_id:\d+$/);
    // Off by default: tokens by their text.
    const plain = (await (await postJson(testApp(engine), '/v1/completions', { ...body, return_tokens_as_token_ids: undefined })).json()).choices[0];
    expect(plain.logprobs.tokens.join('')).toBe(plain.text);
    expect(plain.text).toBe(choice.text);
  });

  it('names streamed completion tokens and chat tokens by id', async () => {
    const streamed = await postJson(testApp(engine), '/v1/completions', { model: MODEL, prompt: golden.prompt, temperature: 0, max_tokens: 6, logprobs: 0, return_tokens_as_token_ids: true, stream: true });
    const events = (await streamed.text()).split('\n\n').filter((event) => event.startsWith('data: {'));
    const tokens = events.flatMap((event) => JSON.parse(event.slice(6)).choices[0]?.logprobs?.tokens ?? []);
    expect(idsOf(tokens)).toHaveLength(6);
    const chat = await postJson(testApp(engine), '/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: 'Once upon a time' }], temperature: 0, max_tokens: 6, logprobs: true, top_logprobs: 1, return_tokens_as_token_ids: true });
    expect(chat.status).toBe(200);
    const content = (await chat.json()).choices[0].logprobs.content as Array<{ token: string; top_logprobs: Array<{ token: string }> }>;
    expect(idsOf(content.map((entry) => entry.token))).toHaveLength(6);
    for (const entry of content) idsOf(entry.top_logprobs.map((top) => top.token));
  });
});
