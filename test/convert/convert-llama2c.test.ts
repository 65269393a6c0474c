/**
 * Runs the converter CLI afresh from the shared llama2.c files and checks the committed
 * models/stories260k/ is exactly what it produces today (so it cannot silently go stale),
 * and that the config it derives matches the documented model.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMMITTED_MODEL_DIR, REPO_ROOT, sharedModelFile } from './model-paths.js';
import { DecoderHarness, maxAbsDiff } from './onnx-decoder-harness.js';
import { createNodeEngine } from '../../src/runtime/node/engine.js';
import { collectGeneration, collectJoiningMidway, golden } from '../helpers/model.js';

const JSON_FILES = ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json'];
let outDir: string;

beforeAll(async () => {
  outDir = await mkdtemp(join(tmpdir(), 'convert-llama2c-'));
  const tsx = join(REPO_ROOT, 'node_modules', '.bin', 'tsx');
  await promisify(execFile)(
    tsx,
    ['scripts/convert-llama2c.ts', sharedModelFile('stories260K.bin'), sharedModelFile('tok512.bin'), outDir],
    { cwd: REPO_ROOT },
  );
});

afterAll(async () => {
  if (outDir) await rm(outDir, { recursive: true, force: true });
});

describe('convert-llama2c CLI', () => {
  it.each(JSON_FILES)('writes %s equal to the committed one', async (name) => {
    const fresh = JSON.parse(await readFile(join(outDir, name), 'utf8'));
    const committed = JSON.parse(await readFile(join(COMMITTED_MODEL_DIR, name), 'utf8'));
    expect(fresh).toEqual(committed);
  });

  it('writes an ONNX model whose logits equal the committed model', async () => {
    const fresh = await DecoderHarness.create(ort, await readFile(join(outDir, 'onnx', 'model.onnx')));
    const committed = await DecoderHarness.create(ort, await readFile(join(COMMITTED_MODEL_DIR, 'onnx', 'model.onnx')));
    const input = { inputIds: [[1, 403, 407, 261, 378], [1, 320, 395, 286, 261]] };
    const a = await fresh.step(input);
    const b = await committed.step(input);
    expect(maxAbsDiff(a.logits, b.logits)).toBe(0);
  });

  it('is deterministic: the fresh model.onnx is byte-identical to the committed one', async () => {
    const fresh = await readFile(join(outDir, 'onnx', 'model.onnx'));
    const committed = await readFile(join(COMMITTED_MODEL_DIR, 'onnx', 'model.onnx'));
    expect(Buffer.compare(fresh, committed)).toBe(0);
  });

  it('derives the stories260K config from the checkpoint header and freq_cis table', async () => {
    const config = JSON.parse(await readFile(join(outDir, 'config.json'), 'utf8'));
    // Values from the model card in shared/models/README.md.
    expect(config).toMatchObject({
      architectures: ['LlamaForCausalLM'],
      model_type: 'llama',
      hidden_size: 64,
      intermediate_size: 172,
      num_hidden_layers: 5,
      num_attention_heads: 8,
      num_key_value_heads: 4,
      head_dim: 8,
      vocab_size: 512,
      max_position_embeddings: 512,
      rms_norm_eps: 1e-5,
      rope_theta: 10000,
      tie_word_embeddings: true,
      bos_token_id: 1,
      eos_token_id: 2,
      hidden_act: 'silu',
      torch_dtype: 'float32',
    });
    const generation = JSON.parse(await readFile(join(outDir, 'generation_config.json'), 'utf8'));
    expect(generation).toEqual({ bos_token_id: 1, eos_token_id: [2, 1] });
  });

  it('exposes the Optimum decoder-with-past interface, plus transformers.js\' num_logits_to_keep', async () => {
    const session = await ort.InferenceSession.create(join(outDir, 'onnx', 'model.onnx'));
    const kv = (prefix: string) => [0, 1, 2, 3, 4].flatMap((i) => [`${prefix}.${i}.key`, `${prefix}.${i}.value`]);
    expect(session.inputNames).toEqual(['input_ids', 'attention_mask', 'position_ids', ...kv('past_key_values'), 'num_logits_to_keep']);
    expect(session.outputNames).toEqual(['logits', ...kv('present')]);
    const meta = session.inputMetadata.find((m) => m.name === 'past_key_values.0.key');
    expect(meta).toMatchObject({ isTensor: true, type: 'float32', shape: ['batch_size', 4, 'past_sequence_length', 8] });
    await session.release();
  });

  it('fails with a usage message when arguments are missing', async () => {
    const tsx = join(REPO_ROOT, 'node_modules', '.bin', 'tsx');
    const run = promisify(execFile)(tsx, ['scripts/convert-llama2c.ts', 'only-one-arg'], { cwd: REPO_ROOT });
    await expect(run).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining('usage:') });
  });

  it('refuses an unknown graph flavour', async () => {
    const tsx = join(REPO_ROOT, 'node_modules', '.bin', 'tsx');
    const args = ['--ops=turbo', sharedModelFile('stories260K.bin'), sharedModelFile('tok512.bin'), outDir];
    const run = promisify(execFile)(tsx, ['scripts/convert-llama2c.ts', ...args], { cwd: REPO_ROOT });
    await expect(run).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining('--ops=fused|gqa|portable') });
  });

  it('writes the portable flavour with --ops=portable: standard ops only, same logits', async () => {
    const tsx = join(REPO_ROOT, 'node_modules', '.bin', 'tsx');
    const portableDir = join(outDir, 'portable');
    const args = ['--ops=portable', sharedModelFile('stories260K.bin'), sharedModelFile('tok512.bin'), portableDir];
    await promisify(execFile)(tsx, ['scripts/convert-llama2c.ts', ...args], { cwd: REPO_ROOT });
    const portableBytes = await readFile(join(portableDir, 'onnx', 'model.onnx'));
    const defaultBytes = await readFile(join(outDir, 'onnx', 'model.onnx'));
    // The operator set domain is written into the model: the default uses it, portable does not.
    expect(defaultBytes.includes('com.microsoft')).toBe(true);
    expect(portableBytes.includes('com.microsoft')).toBe(false);
    const input = { inputIds: [[1, 403, 407, 261, 378]] };
    const portable = await (await DecoderHarness.create(ort, portableBytes)).step(input);
    const fused = await (await DecoderHarness.create(ort, defaultBytes)).step(input);
    expect(maxAbsDiff(portable.logits, fused.logits)).toBeLessThan(1e-4);
  });

  it('writes the in-place KV flavour with --ops=inplace: served with the llama2.c reference greedy output, alone and batched', async () => {
    const tsx = join(REPO_ROOT, 'node_modules', '.bin', 'tsx');
    const inplaceDir = join(outDir, 'inplace');
    const args = ['--ops=inplace', sharedModelFile('stories260K.bin'), sharedModelFile('tok512.bin'), inplaceDir];
    await promisify(execFile)(tsx, ['scripts/convert-llama2c.ts', ...args], { cwd: REPO_ROOT });
    // The embedded folder's in-place twin is exactly this graph.
    const fresh = await readFile(join(inplaceDir, 'onnx', 'model.onnx'));
    expect(Buffer.compare(fresh, await readFile(join(COMMITTED_MODEL_DIR, 'onnx', 'model.inplace.onnx')))).toBe(0);
    // Every layer's new keys and values leave as one output, 2 × 5 layers blocks of [B, 4, S, 8].
    const harness = await DecoderHarness.create(ort, fresh);
    expect(harness.session.outputNames).toEqual(['logits', 'new_key_values']);
    const step = await harness.step({ inputIds: [golden.prompt_ids.slice(0, 3), golden.prompt_ids.slice(1, 4)] });
    expect(step.outputs.new_key_values.dims).toEqual([2 * 5 * 2, 4, 3, 8]);
    const engine = await createNodeEngine({ modelDir: inplaceDir, limits: { speculativeDecoding: 'off' } });
    try {
      expect(engine.loadReport.contract).toContain('in-place KV (new_key_values)');
      const greedy = { temperature: 0, maxTokens: golden.completion_ids.length, ignoreEos: true };
      const alone = await collectGeneration(engine, golden.prompt_ids, greedy);
      expect(alone.tokenIds).toEqual(golden.completion_ids);
      expect(alone.text).toBe(golden.completion_text);
      const prompts = [golden.prompt_ids, golden.prompt_ids.slice(0, 3), golden.prompt_ids];
      const together = await collectJoiningMidway(engine, prompts, greedy);
      expect(together[0].tokenIds).toEqual(golden.completion_ids);
      expect(together[2].tokenIds).toEqual(golden.completion_ids);
      expect(together[1].tokenIds).toEqual((await collectGeneration(engine, prompts[1], greedy)).tokenIds);
    } finally {
      await engine.dispose();
    }
  });
});
