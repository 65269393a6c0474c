/**
 * Issue 41, family 10: run-time LoRA content is distrusted. Each of the audit's files, at a
 * small scale, is refused by /v1/load_lora_adapter with a 400 and a small body while /health
 * answers: a catastrophic-backtracking target_modules / rank_pattern (before: the loop never
 * came back), a safetensors file whose tensors overlap (before: each copied and widened before
 * any check), a weights file larger than any adapter for the base can be (refused from its
 * size), and names past their bound (before: 16 names of 1 MiB made /v1/models 16 MiB).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DecoderCheckpoint } from '../../src/graph/decoder-checkpoint.js';
import { parseServerConfig } from '../../src/config/server-config.js';
import type { LocalEngine } from '../../src/engine/local-engine.js';
import { createNodeEngine } from '../../src/runtime/node/engine.js';
import { nodeLoraOptions } from '../../src/runtime/node/adapters.js';
import { ModulePattern, PatternBudget } from '../../src/adapters/module-pattern.js';
import { loadSharedCheckpoint } from '../convert/model-paths.js';
import { randomAdapter, writeAdapterDir } from '../helpers/lora-fixtures.js';
import { expectNoStall, withHeartbeat } from './heartbeat.js';
import { MODEL, MODEL_DIR, expectErrorBody, postJson, testApp } from './helpers.js';

let ckpt: DecoderCheckpoint;
let loraRoot: string;
let engine: LocalEngine;
let app: ReturnType<typeof testApp>;

beforeAll(async () => {
  ckpt = await loadSharedCheckpoint();
  loraRoot = await mkdtemp(join(tmpdir(), 'lora-bounds-'));
  const config = parseServerConfig({ modelDir: MODEL_DIR, servedModelName: MODEL, allowRuntimeLoraUpdating: true, loraRoot, maxCpuLoras: 4 });
  engine = await createNodeEngine({ modelDir: MODEL_DIR, servedModelName: MODEL, lora: nodeLoraOptions(config) });
  app = testApp(engine, { allowRuntimeLoraUpdating: true, loraRoot });
});

afterAll(async () => {
  await engine?.dispose();
  await rm(loraRoot, { recursive: true, force: true });
});

/** A valid small adapter with its config changed by `edit`. */
async function adapterWith(name: string, edit: (config: Record<string, unknown>) => void): Promise<string> {
  const adapter = randomAdapter(ckpt, { seed: 5, rank: 2, alpha: 4, targets: ['q_proj'] });
  edit(adapter.config);
  return writeAdapterDir(join(loraRoot, name), adapter);
}

/** A safetensors file from a raw header and data section. */
function safetensorsBytes(header: Record<string, unknown>, data: Uint8Array): Uint8Array {
  const json = new TextEncoder().encode(JSON.stringify(header));
  const out = new Uint8Array(8 + json.length + data.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true);
  out.set(json, 8);
  out.set(data, 8 + json.length);
  return out;
}

async function expectLoadRefused(body: unknown, message: RegExp): Promise<void> {
  const text = JSON.stringify(body);
  const { result, report } = await withHeartbeat(app, async () => {
    const response = await postJson(app, '/v1/load_lora_adapter', text);
    return { status: response.status, raw: await response.text() };
  });
  expect(result.status, result.raw.slice(0, 300)).toBe(400);
  expect(result.raw.length).toBeLessThan(1024);
  const parsed = JSON.parse(result.raw);
  expectErrorBody(parsed, 400, 'BadRequestError', parsed.param);
  expect(parsed.message).toMatch(message);
  expectNoStall(report);
  expect((await postJson(app, '/v1/completions', { model: MODEL, prompt: 'Hi', max_tokens: 2 })).status).toBe(200);
}

describe('adapter patterns run without backtracking', () => {
  it('target_modules "(.*.*)*!" (the audit: the server never answered again) is judged at once', async () => {
    const path = await adapterWith('backtrack', (config) => {
      config.target_modules = '(.*.*)*!';
    });
    await expectLoadRefused({ lora_name: 'backtrack', lora_path: path }, /target_modules \("\(\.\*\.\*\)\*!"\) does not select/);
  });

  it('a rank_pattern key of nested stars is judged at once, and a fitting one still applies', async () => {
    const path = await adapterWith('rank-backtrack', (config) => {
      config.rank_pattern = { '(a|a?)+(x*)*(x*)*y': 9, 'q_proj': 2 };
    });
    const loaded = await postJson(app, '/v1/load_lora_adapter', { lora_name: 'rank-backtrack', lora_path: path });
    expect(loaded.status, await loaded.clone().text()).toBe(200);
    const wrong = await adapterWith('rank-wrong', (config) => {
      config.rank_pattern = { '(.*)*q_proj': 7 };
    });
    await expectLoadRefused({ lora_name: 'rank-wrong', lora_path: wrong }, /has rank 2, but adapter_config\.json gives 7 for it/);
  });

  it('a pattern the safe engine cannot run (a backreference) is refused naming it', async () => {
    const path = await adapterWith('backref', (config) => {
      config.target_modules = '(q)\\1_proj';
    });
    await expectLoadRefused({ lora_name: 'backref', lora_path: path }, /target_modules pattern .* cannot be run safely/);
  });

  it('matches as PEFT does (the whole name or a dotted suffix), in time linear in the key', () => {
    const budget = new PatternBudget();
    const pattern = ModulePattern.compile('.*\\.(q_proj|v_proj)');
    expect(pattern.matches('model.layers.0.self_attn.q_proj', budget)).toBe(true);
    expect(pattern.matches('model.layers.0.self_attn.k_proj', budget)).toBe(false);
    expect(ModulePattern.compile('q_proj').matches('model.layers.3.self_attn.q_proj', budget)).toBe(true);
    expect(ModulePattern.compile('q_proj').matches('model.layers.3.self_attn.xq_proj', budget)).toBe(false);
    expect(ModulePattern.compile('layers\\.1\\.mlp\\.up_proj').matches('model.layers.1.mlp.up_proj', budget)).toBe(true);
    expect(ModulePattern.compile('layers\\.1\\.mlp\\.up_proj').matches('model.layers.11.mlp.up_proj', budget)).toBe(false);
    // JavaScript's RegExp takes exponential time on this key; the NFA a few hundred visits per character.
    const evil = ModulePattern.compile('(a*)*b');
    const before = budget.used;
    expect(evil.matches('a'.repeat(5000), budget)).toBe(false);
    expect(budget.used - before).toBeLessThan(5000 * 20);
  });
});

describe('adapter weights are checked before any copy', () => {
  it('40 tensors over one byte range (the audit: +1.3 GB) are refused from the header', async () => {
    const count = 16 * 64;
    const data = new Uint8Array(count * 4);
    const header: Record<string, unknown> = {};
    for (let i = 0; i < 40; i++) header[`base_model.model.model.layers.0.self_attn.q_proj.lora_${i % 2 ? 'B' : 'A'}.weight${i}`] = { dtype: 'F32', shape: [16, 64], data_offsets: [0, count * 4] };
    const dir = join(loraRoot, 'overlap');
    await writeAdapterDir(dir, { config: randomAdapter(ckpt, { seed: 1, rank: 2, alpha: 4, targets: ['q_proj'] }).config, weights: safetensorsBytes(header, data) });
    await expectLoadRefused({ lora_name: 'overlap', lora_path: dir }, /tensors may not overlap/);
  });

  it('a data section with bytes no tensor claims is refused', async () => {
    const header = { 'base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight': { dtype: 'F32', shape: [2, 64], data_offsets: [0, 512] } };
    const dir = join(loraRoot, 'gap');
    await writeAdapterDir(dir, { config: randomAdapter(ckpt, { seed: 1, rank: 2, alpha: 4, targets: ['q_proj'] }).config, weights: safetensorsBytes(header, new Uint8Array(4096)) });
    await expectLoadRefused({ lora_name: 'gap', lora_path: dir }, /must hold its tensors and nothing else/);
  });

  it('a weights file larger than any adapter of this base can be is refused from its size', async () => {
    const dir = join(loraRoot, 'huge');
    await writeAdapterDir(dir, { config: randomAdapter(ckpt, { seed: 1, rank: 2, alpha: 4, targets: ['q_proj'] }).config, weights: new Uint8Array(0) });
    await writeFile(join(dir, 'adapter_model.safetensors'), Buffer.alloc(16 * 1024 * 1024));
    await expectLoadRefused({ lora_name: 'huge', lora_path: dir }, /adapter_model\.safetensors has 16777216 bytes, more than the \d+ an adapter for this model at maxLoraRank can need/);
  });

  it('a 2 MiB adapter_config.json is refused from its size', async () => {
    const dir = await adapterWith('fat-config', (config) => {
      config.notes = 'x'.repeat(2 * 1024 * 1024);
    });
    await expectLoadRefused({ lora_name: 'fat-config', lora_path: dir }, /adapter_config\.json has \d+ bytes/);
  });
});

describe('adapter names are bounded', () => {
  it('a 1 MiB name is refused with a small body, and /v1/models stays small', async () => {
    const path = await adapterWith('named', () => {});
    await expectLoadRefused({ lora_name: 'n'.repeat(1024 * 1024), lora_path: path }, /an adapter name has at most 256 characters, got 1048576/);
    await expectLoadRefused({ lora_name: 'a\u0000b', lora_path: path }, /control characters/);
    const models = await app.request('/v1/models');
    expect((await models.text()).length).toBeLessThan(4096);
  });
});
