/**
 * WebLlmEngine behind the HTTP app, on a stand-in for web-llm's MLCEngine that samples a
 * scripted token sequence and records what it was asked: which request fields reach
 * web-llm and how, which are refused with a 400 naming them, and that our output
 * processing (stop strings, EOS, max_tokens, disconnects) runs on web-llm's tokens. The
 * real web-llm runs in test/e2e/playground-webllm.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { parseServerConfig } from '../../../src/config/server-config.js';
import { forwardingGuideCompiler } from '../../../src/engine/remote/guides.js';
import { ARGMAX_TOP_P, type WebLlmGenerationConfig } from '../../../src/engine/webllm/generation-config.js';
import { sequenceSeed } from '../../../src/engine/sequence-group.js';
import { WebLlmEngine, type MlcEngineInternals, type WebLlmPipeline } from '../../../src/engine/webllm/webllm-engine.js';
import { createApp } from '../../../src/http/app.js';
import { HfTokenizer } from '../../../src/tokenizer/hf-tokenizer.js';
import { byteLevelTokenizerFiles } from '../../helpers/byom-fixtures.js';

const { tokenizerJson, tokenizerConfig, vocabSize, special } = byteLevelTokenizerFiles();
const tokenizer = HfTokenizer.fromJson(tokenizerJson, tokenizerConfig);
const ids = (text: string) => tokenizer.encode(text, { addSpecialTokens: false });

/**
 * A stand-in MLCEngine whose model "samples" `script` token by token (`scripts[i]` for the
 * request's i-th prefill); with logprobs on, step j's distribution is `probs(j)`.
 */
function fakeMlc(script: number[], scripts: number[][] = [script], probs?: (step: number) => number[]) {
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
  let step = 0;
  const showDistribution = (genConfig: WebLlmGenerationConfig) => {
    const at = step;
    if (genConfig.logprobs && probs) pipeline.logitsOnCPU = { toArray: () => Float32Array.from(probs(at)) };
    step += 1;
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
      script = scripts[(calls.prompts.length - 1) % scripts.length];
      step = 0;
      showDistribution(genConfig);
      pipeline.outputIds = [script[0]];
    },
    async decode(_pipeline, genConfig) {
      calls.decodes += 1;
      await new Promise((resolve) => setTimeout(resolve, 1));
      showDistribution(genConfig);
      pipeline.outputIds.push(script[pipeline.outputIds.length]);
    },
    async unload() {},
  };
  return { mlc, calls };
}

function appOn(script: number[], scripts?: number[][], probs?: (step: number) => number[]) {
  const { mlc, calls } = fakeMlc(script, scripts, probs);
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
      logit_bias: { '5': 3 },
      ignore_eos: true,
      max_tokens: 3,
      stop: [],
    });
    // The seed's low 32 bits, then a fresh clock seed so it applies to this request only.
    expect(calls.seeds[0]).toBe(7);
    expect(calls.seeds).toHaveLength(2);
  });

  it('defaults from mlc-chat-config.json (not its repetition_penalty, which web-llm never applies), greedy as temperature 0', async () => {
    const { post, calls } = appOn(ids(' a b c'));
    expect((await post('/v1/completions', { model: 'tiny', prompt: 'x', max_tokens: 1 })).status).toBe(200);
    expect(calls.configs[0]).toMatchObject({ temperature: 0.7, top_p: 0.8 });
    expect(calls.configs[0]).not.toHaveProperty('repetition_penalty');
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
      [{ repetition_penalty: 1.1 }, 'repetition_penalty'],
      [{ n: 1, best_of: 2, temperature: 1 }, 'best_of'],
      [{ prompt_logprobs: 1 }, 'prompt_logprobs'],
      [{ logprobs: 2, temperature: 1, top_p: 0.9 }, 'logprobs'],
      [{ use_beam_search: true, n: 2, best_of: 2, temperature: 0, top_p: 1 }, 'use_beam_search'],
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

  it('runs n sequences one after another, each seeded as the onnxruntime engine seeds it', async () => {
    const [first, second] = [ids(' a b'), ids(' c d e')];
    const { post, calls } = appOn([], [first, second]);
    const response = await post('/v1/completions', { model: 'tiny', prompt: 'x', max_tokens: 2, temperature: 1, n: 2, seed: 9 });
    expect(response.status).toBe(200);
    const json = await response.json();
    expect(json.choices.map((choice: { index: number; text: string }) => [choice.index, choice.text])).toEqual([
      [0, tokenizer.decode(first.slice(0, 2))],
      [1, tokenizer.decode(second.slice(0, 2))],
    ]);
    expect(json.usage.completion_tokens).toBe(4);
    expect(calls.prompts).toEqual(['x', 'x']);
    // Sequence i's seed is sequenceSeed(seed, i), the one LocalEngine gives it; then the clock.
    expect(calls.seeds.slice(0, 2)).toEqual([9, Number(BigInt.asUintN(32, sequenceSeed(9n, 1)!))]);
    expect(calls.seeds).toHaveLength(3);
    // Streamed: each sequence's chunks carry its index.
    const streamed = await (await post('/v1/completions', { model: 'tiny', prompt: 'x', max_tokens: 2, temperature: 1, n: 2, seed: 9, stream: true })).text();
    const indexes = streamed
      .split('\n\n')
      .filter((event) => event.startsWith('data: {'))
      .map((event) => JSON.parse(event.slice(6)).choices[0]?.index);
    expect(new Set(indexes)).toEqual(new Set([0, 1]));
  });

  it('reports logprobs from the distribution web-llm drew from; greedy ones at temperature 1 with an argmax top_p', async () => {
    const distributions = [
      [0.5, 0.25, 0.125, 0.125],
      [0.1, 0.6, 0.3, 0],
    ];
    const script = [0, 1];
    const { post, calls } = appOn(script, undefined, (step) => [...distributions[step], ...new Array(vocabSize - 4).fill(0)]);
    const response = await post('/v1/completions', { model: 'tiny', prompt: 'x', max_tokens: 2, temperature: 0, logprobs: 2 });
    expect(response.status, await response.clone().text()).toBe(200);
    const { logprobs } = (await response.json()).choices[0];
    expect(logprobs.token_logprobs[0]).toBeCloseTo(Math.log(0.5), 6);
    expect(logprobs.token_logprobs[1]).toBeCloseTo(Math.log(0.6), 6);
    expect(Object.values(logprobs.top_logprobs[0]).map(Number)).toEqual([Math.log(0.5), Math.log(0.25)].map((v) => expect.closeTo(v, 6)));
    expect(Object.values(logprobs.top_logprobs[1]).map(Number)).toEqual([Math.log(0.6), Math.log(0.3)].map((v) => expect.closeTo(v, 6)));
    // web-llm's logprobs at temperature 0 are one-hot (softmax at 1e-6): greedy asks for temperature 1 and a top_p that keeps the argmax.
    expect(calls.configs[0]).toMatchObject({ temperature: 1, top_p: ARGMAX_TOP_P, logprobs: true, top_logprobs: 0 });
    // Sampling: web-llm's distribution is softmax(logits / temperature), as ours with top_p 1.
    expect((await post('/v1/completions', { model: 'tiny', prompt: 'x', max_tokens: 1, temperature: 0.5, top_p: 1, logprobs: 0 })).status).toBe(200);
    expect(calls.configs[1]).toMatchObject({ temperature: 0.5, top_p: 1, logprobs: true });
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
