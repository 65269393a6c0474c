/**
 * WebLlmEngine behind the HTTP app, on a stand-in for web-llm's MLCEngine that samples a
 * scripted token sequence and records what it was asked: which request fields reach
 * web-llm and how, which are refused with a 400 naming them, and that our output
 * processing (stop strings, EOS, max_tokens, disconnects) runs on web-llm's tokens. The
 * real web-llm runs in test/e2e/playground-webllm.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { parseServerConfig } from '../../../src/config/server-config.js';
import { forwardingGuideCompiler } from '../../../src/engine/remote-guides.js';
import type { WebLlmGenerationConfig } from '../../../src/engine/webllm/generation-config.js';
import { WebLlmEngine, type MlcEngineInternals, type WebLlmPipeline } from '../../../src/engine/webllm/webllm-engine.js';
import { createApp } from '../../../src/http/app.js';
import { HfTokenizer } from '../../../src/tokenizer/hf-tokenizer.js';
import { byteLevelTokenizerFiles } from '../../helpers/byom-fixtures.js';

const { tokenizerJson, tokenizerConfig, vocabSize, special } = byteLevelTokenizerFiles();
const tokenizer = HfTokenizer.fromJson(tokenizerJson, tokenizerConfig);
const ids = (text: string) => tokenizer.encode(text, { addSpecialTokens: false });

/** A stand-in MLCEngine whose model "samples" `script` token by token. */
function fakeMlc(script: number[]) {
  const calls = { prompts: [] as string[], configs: [] as WebLlmGenerationConfig[], seeds: [] as number[], decodes: 0 };
  let busy = Promise.resolve();
  let releaseLock = () => {};
  const pipeline: WebLlmPipeline & { maxTokens: number } = {
    outputIds: [],
    maxTokens: Infinity,
    stopped: () => pipeline.outputIds.length >= Math.min(pipeline.maxTokens, script.length),
    setSeed: (seed) => calls.seeds.push(seed),
    triggerStop: () => {},
  };
  const mlc: MlcEngineInternals = {
    getLLMStates: () => ['fake', pipeline, {}],
    loadedModelIdToLock: new Map([
      [
        'fake',
        {
          acquire: async () => {
            const before = busy;
            busy = new Promise<void>((resolve) => (releaseLock = resolve));
            await before;
          },
          release: async () => releaseLock(),
        },
      ],
    ]),
    async prefill(request, _pipeline, _chatConfig, genConfig) {
      calls.prompts.push(request.prompt);
      calls.configs.push(genConfig);
      pipeline.maxTokens = genConfig.max_tokens;
      pipeline.outputIds = [script[0]];
    },
    async decode() {
      calls.decodes += 1;
      await new Promise((resolve) => setTimeout(resolve, 1));
      pipeline.outputIds.push(script[pipeline.outputIds.length]);
    },
    async unload() {},
  };
  return { mlc, calls };
}

function appOn(script: number[]) {
  const { mlc, calls } = fakeMlc(script);
  const chatConfig = {
    vocab_size: vocabSize,
    context_window_size: 4096,
    temperature: 0.7,
    top_p: 0.8,
    repetition_penalty: 1.05,
    conv_template: { stop_token_ids: [special.imEnd, special.endOfText] },
  };
  const engine = new WebLlmEngine({ mlc, modelId: 'fake', servedModelName: 'tiny', files: { chatConfig, tokenizerJson, tokenizerConfig } });
  const app = createApp({ engine, config: parseServerConfig({ servedModelName: 'tiny' }), guideCompiler: forwardingGuideCompiler });
  const post = async (path: string, body: Record<string, unknown>, signal?: AbortSignal) =>
    app.fetch(new Request(`http://local${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal }));
  return { post, calls };
}

describe('WebLlmEngine', () => {
  it('sends the decoded prompt and the sampling fields web-llm honours, and reads its tokens back by id', async () => {
    const { post, calls } = appOn(ids(' the cat is on the mat'));
    const response = await post('/v1/completions', {
      model: 'tiny',
      prompt: 'the dog',
      max_tokens: 3,
      temperature: 0.5,
      top_p: 0.9,
      presence_penalty: 0.5,
      frequency_penalty: 0.25,
      repetition_penalty: 1.1,
      logit_bias: { '5': 3 },
      seed: 2 ** 32 + 7,
    });
    expect(response.status).toBe(200);
    const json = await response.json();
    expect(json.choices[0]).toMatchObject({ text: tokenizer.decode(ids(' the cat is on the mat').slice(0, 3)), finish_reason: 'length' });
    expect(json.usage).toMatchObject({ prompt_tokens: ids('the dog').length, completion_tokens: 3 });
    expect(calls.prompts).toEqual(['the dog']);
    expect(calls.configs[0]).toEqual({
      temperature: 0.5,
      top_p: 0.9,
      presence_penalty: 0.5,
      frequency_penalty: 0.25,
      repetition_penalty: 1.1,
      logit_bias: { '5': 3 },
      ignore_eos: true,
      max_tokens: 3,
      stop: [],
    });
    // The seed's low 32 bits, then a fresh clock seed so it applies to this request only.
    expect(calls.seeds[0]).toBe(7);
    expect(calls.seeds).toHaveLength(2);
  });

  it('defaults from mlc-chat-config.json, greedy as temperature 0', async () => {
    const { post, calls } = appOn(ids(' a b c'));
    expect((await post('/v1/completions', { model: 'tiny', prompt: 'x', max_tokens: 1 })).status).toBe(200);
    expect(calls.configs[0]).toMatchObject({ temperature: 0.7, top_p: 0.8, repetition_penalty: 1.05 });
    expect((await post('/generate', { prompt: 'x', max_tokens: 1, temperature: 0 })).status).toBe(200);
    expect(calls.configs[1]).toMatchObject({ temperature: 0 });
  });

  it('applies stop strings, stop token ids and EOS on its side and stops web-llm there', async () => {
    const script = [...ids(' one two'), special.imEnd, ...ids(' three four five')];
    let app = appOn(script);
    let json = await (await app.post('/v1/completions', { model: 'tiny', prompt: 'x', max_tokens: 30, temperature: 0 })).json();
    expect(json.choices[0]).toMatchObject({ text: ' one two', finish_reason: 'stop' });
    expect(app.calls.decodes).toBe(ids(' one two').length);

    app = appOn(ids(' one two three'));
    json = await (await app.post('/v1/completions', { model: 'tiny', prompt: 'x', max_tokens: 30, temperature: 0, stop: [' tw'] })).json();
    expect(json.choices[0]).toMatchObject({ text: ' one', finish_reason: 'stop', stop_reason: ' tw' });
  });

  it('streams MindIE events, one per token', async () => {
    const { post } = appOn(ids(' a b'));
    const text = await (await post('/generate', { prompt: 'x', max_tokens: 2, temperature: 0, stream: true })).text();
    expect(text).toBe(`data: {"text":[" a"]}\n\ndata: {"text":[" b"]}\n\n`);
  });

  it('maps response_format / guided_json to a JSON schema and guided_choice to a grammar', async () => {
    const schema = { type: 'object', properties: { a: { type: 'integer' } }, required: ['a'] };
    const { post, calls } = appOn(ids('{"a":1}'));
    const chat = await post('/v1/chat/completions', {
      model: 'tiny',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 1,
      response_format: { type: 'json_schema', json_schema: { name: 'a', schema } },
    });
    expect(chat.status, await chat.clone().text()).toBe(200);
    expect(calls.configs[0].response_format).toEqual({ type: 'json_object', schema: JSON.stringify(schema) });
    // The chat template ran here: web-llm gets the templated text, special tokens spelled out.
    expect(calls.prompts[0]).toBe('<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n');
    await post('/v1/completions', { model: 'tiny', prompt: 'x', max_tokens: 1, guided_choice: ['yes', 'no "way"'] });
    expect(calls.configs[1].response_format).toEqual({ type: 'grammar', grammar: 'root ::= "yes" | "no \\"way\\""' });
    await post('/v1/completions', { model: 'tiny', prompt: 'x', max_tokens: 1, response_format: { type: 'json_object' } });
    expect(calls.configs[2].response_format).toEqual({ type: 'json_object' });
  });

  it('refuses with a 400 naming the field whatever web-llm cannot do, before it is asked', async () => {
    const { post, calls } = appOn(ids(' a'));
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ temperature: 1, top_k: 5 }, 'top_k'],
      [{ temperature: 1, min_p: 0.1 }, 'min_p'],
      [{ min_tokens: 2 }, 'min_tokens'],
      [{ guided_regex: '[a-z]+' }, 'guided_regex'],
      [{ n: 2, temperature: 1 }, 'n'],
      [{ logprobs: 2 }, 'logprobs'],
    ];
    for (const [fields, param] of cases) {
      const response = await post('/v1/completions', { model: 'tiny', prompt: 'x', max_tokens: 2, ...fields });
      expect(response.status, param).toBe(400);
      expect(await response.json(), param).toMatchObject({ object: 'error', param, code: 400 });
    }
    // Greedy ignores top_k as vLLM does.
    expect((await post('/v1/completions', { model: 'tiny', prompt: 'x', max_tokens: 1, temperature: 0, top_k: 5 })).status).toBe(200);
    expect(calls.prompts).toHaveLength(1);
  });

  it('stops stepping web-llm when the client goes away', async () => {
    const { post, calls } = appOn(ids(' a b c d e f g h i j k l m n o p'));
    const controller = new AbortController();
    const response = await post('/generate', { prompt: 'x', max_tokens: 16, temperature: 0, stream: true }, controller.signal);
    const reader = response.body!.getReader();
    await reader.read();
    controller.abort();
    await reader.cancel().catch(() => {});
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(calls.decodes).toBeLessThan(4);
    // The lock is free again: the next request runs.
    expect((await post('/generate', { prompt: 'x', max_tokens: 1, temperature: 0 })).status).toBe(200);
  });
});
