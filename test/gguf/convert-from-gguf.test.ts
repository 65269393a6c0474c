/**
 * `npm run convert -- --from-gguf` writes the model folder for a GGUF: its fused graph
 * (the Hugging Face present.* contract, for any runtime) and the in-place twin, which load
 * like any model folder and decode as serving the .gguf directly does (whose tokens the
 * llama-server parity suite checks).
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { createNodeEngine } from '../../src/runtime/node/engine.js';
import { collectGeneration, REPO_ROOT } from '../helpers/model.js';

const GGUF = join(REPO_ROOT, 'test/fixtures/gguf/tiny-llama-kquants.gguf');
const dir = mkdtempSync(join(tmpdir(), 'gguf-convert-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** "Once upon a time" with BOS, as llama-server tokenizes it. */
const PROMPT = [1, 403, 407, 261, 378];

describe('npm run convert -- --from-gguf', () => {
  it('writes a folder whose graphs decode as the served GGUF does', async () => {
    const out = join(dir, 'folder');
    await promisify(execFile)(process.execPath, ['--import', 'tsx', 'scripts/convert-llama2c.ts', '--from-gguf', GGUF, out], { cwd: REPO_ROOT });
    for (const file of ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json', 'onnx/model.onnx', 'onnx/model.onnx_data', 'onnx/model.inplace.onnx']) {
      expect(existsSync(join(out, file)), file).toBe(true);
    }
    process.env.GGUF_CACHE_DIR = join(dir, 'cache');
    const served = await createNodeEngine({ modelDir: GGUF });
    const fused = await createNodeEngine({ modelDir: out, modelFile: 'onnx/model.onnx' });
    const inPlace = await createNodeEngine({ modelDir: out });
    expect(fused.loadReport.contract).not.toMatch(/in-place/);
    expect(inPlace.loadReport.contract).toMatch(/in-place/);
    const params = { temperature: 0, maxTokens: 20, ignoreEos: true };
    const reference = (await collectGeneration(served, PROMPT, params)).tokenIds;
    expect(reference).toHaveLength(20);
    expect((await collectGeneration(fused, PROMPT, params)).tokenIds).toEqual(reference);
    expect((await collectGeneration(inPlace, PROMPT, params)).tokenIds).toEqual(reference);
    await Promise.all([served.dispose(), fused.dispose(), inPlace.dispose()]);
  }, 60_000);

  it("a gemma3 file: the fused and in-place folders give transformers' greedy ids (two rope tables, q/k norms, sliding window)", async () => {
    const file = join(REPO_ROOT, 'test/fixtures/gguf/tiny-gemma3.gguf');
    const reference = JSON.parse(readFileSync(join(REPO_ROOT, 'test/fixtures/gguf/tiny-gemma3-reference.json'), 'utf8')) as {
      generations: Array<{ prompt_ids: number[]; greedy_ids: number[] }>;
    };
    const out = join(dir, 'gemma3');
    await promisify(execFile)(process.execPath, ['--import', 'tsx', 'scripts/convert-llama2c.ts', '--from-gguf', file, out], { cwd: REPO_ROOT });
    const config = JSON.parse(readFileSync(join(out, 'config.json'), 'utf8'));
    expect(config).toMatchObject({ architectures: ['Gemma3ForCausalLM'], model_type: 'gemma3_text', sliding_window: 16 });
    const fused = await createNodeEngine({ modelDir: out, modelFile: 'onnx/model.onnx' });
    const inPlace = await createNodeEngine({ modelDir: out });
    for (const { prompt_ids: prompt, greedy_ids: greedy } of reference.generations) {
      const params = { temperature: 0, maxTokens: greedy.length, ignoreEos: true };
      expect((await collectGeneration(fused, prompt, params)).tokenIds).toEqual(greedy);
      expect((await collectGeneration(inPlace, prompt, params)).tokenIds).toEqual(greedy);
    }
    await Promise.all([fused.dispose(), inPlace.dispose()]);
  }, 120_000);
});
