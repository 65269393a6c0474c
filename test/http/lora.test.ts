/**
 * LoRA adapters over HTTP: `model` selects an adapter on every generation endpoint,
 * /v1/models lists adapters under the base model, the spec's own /generate example
 * ("model": "None") still runs the base model, and adapters load and unload at run time
 * only when the server allows it.
 */
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DecoderCheckpoint } from '../../src/graph/decoder-checkpoint.js';
import { parseServerConfig } from '../../src/config/server-config.js';
import type { LocalEngine } from '../../src/engine/local-engine.js';
import { createNodeEngine } from '../../src/runtime/node/engine.js';
import { nodeLoraOptions } from '../../src/runtime/node/adapters.js';
import { loadSharedCheckpoint } from '../convert/model-paths.js';
import { randomAdapter, writeAdapterDir } from '../helpers/lora-fixtures.js';
import { expectError, golden, MODEL, MODEL_DIR, postJson, testApp } from './helpers.js';

let ckpt: DecoderCheckpoint;
let dir: string;
let storyPath: string;
let tinyPath: string;
let badPath: string;
let engine: LocalEngine;
let app: ReturnType<typeof testApp>;
let loraRoot: string;
const REFUSED = (name: string) => `LoRA adapter "${name}" cannot be loaded: the path does not name a readable adapter folder inside the server's LoRA root (loraRoot).`;

beforeAll(async () => {
  ckpt = await loadSharedCheckpoint();
  dir = await mkdtemp(join(tmpdir(), 'lora-http-'));
  storyPath = await writeAdapterDir(join(dir, 'story'), randomAdapter(ckpt, { seed: 41, rank: 8, alpha: 16 }));
  // Run-time loads are confined to loraRoot; the startup adapter (story) lives outside it.
  loraRoot = join(dir, 'root');
  tinyPath = await writeAdapterDir(join(loraRoot, 'tiny'), randomAdapter(ckpt, { seed: 42, rank: 2, alpha: 8, dtype: 'BF16', targets: ['v_proj', 'o_proj'] }));
  const bad = randomAdapter(ckpt, { seed: 43, rank: 2, alpha: 8, targets: ['q_proj'] });
  (bad.config as { target_modules: string[] }).target_modules = ['query_key_value'];
  badPath = await writeAdapterDir(join(loraRoot, 'bad'), bad);
  const config = parseServerConfig({ modelDir: MODEL_DIR, servedModelName: MODEL, loraModules: `story=${storyPath}`, allowRuntimeLoraUpdating: true, loraRoot, maxCpuLoras: 4 });
  engine = await createNodeEngine({ modelDir: MODEL_DIR, servedModelName: MODEL, lora: nodeLoraOptions(config) });
  app = testApp(engine, { loraModules: config.loraModules, allowRuntimeLoraUpdating: true, loraRoot });
});

afterAll(async () => {
  await engine?.dispose();
  await rm(dir, { recursive: true, force: true });
});

const completion = async (model: string, prompt = golden.prompt) => {
  const res = await postJson(app, '/v1/completions', { model, prompt, max_tokens: 16, temperature: 0 });
  expect(res.status).toBe(200);
  return (await res.json()) as { model: string; choices: Array<{ text: string }> };
};

describe('LoRA adapters over HTTP', () => {
  it('selects the adapter by model on /v1/completions, /v1/chat/completions and /generate', async () => {
    const base = await completion(MODEL);
    const story = await completion('story');
    expect(story.model).toBe('story');
    expect(story.choices[0].text).not.toBe(base.choices[0].text);

    const generated = await postJson(app, '/generate', { prompt: golden.prompt, max_tokens: 16, temperature: 0, model: 'story' });
    expect(generated.status).toBe(200);
    expect(((await generated.json()) as { text: string[] }).text[0]).toBe(golden.prompt + story.choices[0].text);

    const chat = await postJson(app, '/v1/chat/completions', { model: 'story', messages: [{ role: 'user', content: 'Tom had a dog.' }], max_tokens: 8, temperature: 0 });
    expect(chat.status).toBe(200);
    const chatBody = (await chat.json()) as { model: string; choices: Array<{ message: { content: string } }> };
    expect(chatBody.model).toBe('story');
    const baseChat = await postJson(app, '/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: 'Tom had a dog.' }], max_tokens: 8, temperature: 0 });
    expect(chatBody.choices[0].message.content).not.toBe(((await baseChat.json()) as typeof chatBody).choices[0].message.content);
  });

  it('streams with an adapter alongside base-model requests', async () => {
    const [base, story] = await Promise.all([completion(MODEL), completion('story')]);
    const res = await postJson(app, '/v1/completions', { model: 'story', prompt: golden.prompt, max_tokens: 16, temperature: 0, stream: true });
    const text = (await res.text())
      .split('\n\n')
      .filter((event) => event.startsWith('data: {'))
      .map((event) => (JSON.parse(event.slice(6)) as { choices: Array<{ text: string }> }).choices[0].text)
      .join('');
    expect(text).toBe(story.choices[0].text);
    expect(base.choices[0].text).toBe(golden.completion_text.slice(0, base.choices[0].text.length));
  });

  it('runs the spec\'s /generate example ("model": "None") on the base model; null and absent too', async () => {
    for (const model of ['None', null, undefined]) {
      const res = await postJson(app, '/generate', { prompt: golden.prompt, max_tokens: 16, temperature: 0, ...(model !== undefined ? { model } : {}) });
      expect(res.status).toBe(200);
      expect(((await res.json()) as { text: string[] }).text[0]).toBe(golden.prompt + (await completion(MODEL)).choices[0].text);
    }
  });

  it('answers an unknown name with a 404 in the error shape', async () => {
    const message = await expectError(postJson(app, '/v1/completions', { model: 'nope', prompt: 'Hi' }), 404, 'NotFoundError');
    expect(message).toBe('The model `nope` does not exist.');
    await expectError(postJson(app, '/generate', { model: 'nope', prompt: 'Hi' }), 404, 'NotFoundError');
    await expectError(postJson(app, '/v1/chat/completions', { model: 'None', messages: [{ role: 'user', content: 'Hi' }] }), 404, 'NotFoundError');
  });

  it('lists adapters in /v1/models with parent and root', async () => {
    const body = (await (await app.request('/v1/models')).json()) as { data: Array<{ id: string; root: string; parent: string | null }> };
    expect(body.data.map(({ id, root, parent }) => ({ id, root, parent }))).toEqual([
      { id: MODEL, root: MODEL, parent: null },
      { id: 'story', root: storyPath, parent: MODEL },
    ]);
  });

  it('loads and unloads adapters at run time', async () => {
    const loaded = await postJson(app, '/v1/load_lora_adapter', { lora_name: 'tiny', lora_path: tinyPath });
    expect(loaded.status).toBe(200);
    expect(await loaded.text()).toBe("Success: LoRA adapter 'tiny' added successfully.");
    const ids = ((await (await app.request('/v1/models')).json()) as { data: Array<{ id: string }> }).data.map((card) => card.id);
    expect(ids).toEqual([MODEL, 'story', 'tiny']);
    expect((await completion('tiny')).model).toBe('tiny');

    const again = await expectError(postJson(app, '/v1/load_lora_adapter', { lora_name: 'tiny', lora_path: tinyPath }), 400, 'BadRequestError');
    expect(again).toBe("The lora adapter 'tiny' has already been loaded.");
    const refused = await expectError(postJson(app, '/v1/load_lora_adapter', { lora_name: 'bad', lora_path: badPath }), 400, 'BadRequestError');
    expect(refused).toMatch(/target module "query_key_value" is not a projection of the base model/);
    const missing = await expectError(postJson(app, '/v1/load_lora_adapter', { lora_name: 'gone', lora_path: join(loraRoot, 'nothing') }), 400, 'BadRequestError');
    expect(missing).toBe(REFUSED('gone'));
    await expectError(postJson(app, '/v1/load_lora_adapter', { lora_name: 'x' }), 400, 'BadRequestError', 'lora_path');
    await expectError(postJson(app, '/v1/load_lora_adapter', { lora_name: MODEL, lora_path: tinyPath }), 400, 'BadRequestError');

    const unloaded = await postJson(app, '/v1/unload_lora_adapter', { lora_name: 'tiny' });
    expect(await unloaded.text()).toBe("Success: LoRA adapter 'tiny' removed successfully.");
    await expectError(postJson(app, '/v1/completions', { model: 'tiny', prompt: 'Hi' }), 404, 'NotFoundError');
    await expectError(postJson(app, '/v1/unload_lora_adapter', { lora_name: 'tiny' }), 404, 'NotFoundError');
  });

  it('confines run-time loads to loraRoot with one error for every refusal, echoing no file bytes', async () => {
    const secret = join(dir, 'secret.txt');
    await writeFile(secret, 'root:x:0:0:SECRET-BYTES\n');
    const outside = await writeAdapterDir(join(dir, 'outside'), randomAdapter(ckpt, { seed: 44, rank: 2, alpha: 8, targets: ['v_proj'] }));
    await symlink(outside, join(loraRoot, 'link-out'));
    const leaky = join(loraRoot, 'leaky');
    await mkdir(leaky);
    await symlink(secret, join(leaky, 'adapter_config.json'));
    await symlink(join(tinyPath, 'adapter_model.safetensors'), join(leaky, 'adapter_model.safetensors'));
    const notJson = join(loraRoot, 'not-json');
    await mkdir(notJson);
    await writeFile(join(notJson, 'adapter_config.json'), 'SECRET-BYTES {');
    await writeFile(join(notJson, 'adapter_model.safetensors'), '');
    const attempts = [outside, join(loraRoot, '..', 'outside'), '../outside', join(loraRoot, 'link-out'), leaky, notJson, '/etc', '/nonexistent/adapter', secret];
    for (const lora_path of attempts) {
      const message = await expectError(postJson(app, '/v1/load_lora_adapter', { lora_name: 'probe', lora_path }), 400, 'BadRequestError');
      expect(message, lora_path).toBe(REFUSED('probe'));
    }
    // A relative path inside the root is fine.
    expect((await postJson(app, '/v1/load_lora_adapter', { lora_name: 'relative', lora_path: 'tiny' })).status).toBe(200);
    expect((await postJson(app, '/v1/unload_lora_adapter', { lora_name: 'relative' })).status).toBe(200);
  });

  it('holds at most maxCpuLoras adapters', async () => {
    // story is loaded; maxCpuLoras is 4.
    for (const name of ['a', 'b', 'c']) expect((await postJson(app, '/v1/load_lora_adapter', { lora_name: name, lora_path: tinyPath })).status).toBe(200);
    const full = await expectError(postJson(app, '/v1/load_lora_adapter', { lora_name: 'd', lora_path: tinyPath }), 400, 'BadRequestError');
    expect(full).toBe("The server holds at most 4 LoRA adapters (maxCpuLoras); unload one before loading 'd'.");
    for (const name of ['a', 'b', 'c']) expect((await postJson(app, '/v1/unload_lora_adapter', { lora_name: name })).status).toBe(200);
    expect(() => parseServerConfig({ loraModules: 'a=/x,b=/y', maxLoras: 1, maxCpuLoras: 1 })).toThrow(/loraModules names 2 adapters, more than maxCpuLoras \(1\)/);
    expect(() => parseServerConfig({ maxLoras: 8, maxCpuLoras: 4 })).toThrow(/maxCpuLoras \(4\) must be at least maxLoras \(8\)/);
    expect(() => nodeLoraOptions(parseServerConfig({ allowRuntimeLoraUpdating: true }))).toThrow(/allowRuntimeLoraUpdating needs loraRoot/);
  });

  it('refuses run-time updates unless allowed', async () => {
    const config = parseServerConfig({ modelDir: MODEL_DIR, loraModules: [`story=${storyPath}`] });
    const locked = await createNodeEngine({ modelDir: MODEL_DIR, servedModelName: MODEL, lora: nodeLoraOptions(config) });
    try {
      const lockedApp = testApp(locked);
      const message = await expectError(postJson(lockedApp, '/v1/load_lora_adapter', { lora_name: 'tiny', lora_path: tinyPath }), 404, 'NotFoundError');
      expect(message).toMatch(/VLLM_ALLOW_RUNTIME_LORA_UPDATING/);
      await expectError(postJson(lockedApp, '/v1/unload_lora_adapter', { lora_name: 'story' }), 404, 'NotFoundError');
      expect((await postJson(lockedApp, '/v1/completions', { model: 'story', prompt: 'Hi', max_tokens: 2 })).status).toBe(200);
    } finally {
      await locked.dispose();
    }
  });
});
