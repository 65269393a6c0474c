import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/engine/types.js';
import { MODEL, expectError, golden, loadEngine, postJson, testApp } from './helpers.js';

let engine: Engine;
beforeAll(async () => {
  engine = await loadEngine();
});
afterAll(() => engine.dispose());

describe('GET /v1/models', () => {
  it('lists the served model in vLLM\'s ModelList shape', async () => {
    const response = await testApp(engine).request('/v1/models');
    expect(response.status).toBe(200);
    const body = await response.json();
    expect(body.object).toBe('list');
    expect(body.data).toHaveLength(1);
    expect(body.data[0]).toMatchObject({ id: MODEL, object: 'model', owned_by: 'vllm', max_model_len: 512, parent: null });
    expect(body.data[0].permission[0]).toMatchObject({ object: 'model_permission', allow_sampling: true });
  });

  it('reports the context length lowered by maxSeqLen', async () => {
    const body = await (await testApp(engine, { maxSeqLen: 256 }).request('/v1/models')).json();
    expect(body.data[0].max_model_len).toBe(256);
  });

  it('GET /v1/models/{id}: the served model\'s card; another id is a 404', async () => {
    const app = testApp(engine);
    const card = await (await app.request(`/v1/models/${MODEL}`)).json();
    const listed = (await (await app.request('/v1/models')).json()).data[0];
    expect({ ...card, created: 0, permission: [] }).toEqual({ ...listed, created: 0, permission: [] });
    const message = await expectError(app.request('/v1/models/org/gpt-4'), 404, 'NotFoundError');
    expect(message).toBe('The model `org/gpt-4` does not exist.');
  });
});

describe('GET /health', () => {
  it('answers 200 with an empty body', async () => {
    const response = await testApp(engine).request('/health');
    expect(response.status).toBe(200);
    expect(await response.text()).toBe('');
  });
});

describe('POST /tokenize and /detokenize', () => {
  it('tokenizes a prompt with BOS by default, without it on request', async () => {
    const app = testApp(engine);
    expect(await (await postJson(app, '/tokenize', { model: MODEL, prompt: golden.prompt })).json()).toEqual({
      count: 5,
      max_model_len: 512,
      tokens: golden.prompt_ids,
    });
    const bare = await (await postJson(app, '/tokenize', { prompt: golden.prompt, add_special_tokens: false })).json();
    expect(bare.tokens).toEqual(golden.prompt_ids.slice(1));
  });

  it('detokenizes ids back to text', async () => {
    const body = await (await postJson(testApp(engine), '/detokenize', { tokens: golden.completion_ids.slice(0, 3) })).json();
    expect(body).toEqual({ prompt: ', there was' });
  });

  it('refuses ids outside the vocabulary, a wrong model and bad input', async () => {
    const app = testApp(engine);
    await expectError(postJson(app, '/detokenize', { tokens: [1, 512] }), 400, 'BadRequestError', 'tokens[1]');
    await expectError(postJson(app, '/detokenize', { tokens: [-1] }), 400, 'BadRequestError', 'tokens[0]');
    await expectError(postJson(app, '/tokenize', { model: 'other', prompt: 'x' }), 404, 'NotFoundError');
    await expectError(postJson(app, '/tokenize', { prompt: 42 }), 400, 'BadRequestError', 'prompt');
    await expectError(
      postJson(app, '/tokenize', { messages: [{ role: 'user', content: 'x' }], add_generation_prompt: true, continue_final_message: true }),
      400,
      'BadRequestError',
      'continue_final_message',
    );
  });
});
