/**
 * Model folders laid out as onnx-community / Optimum / transformers.js export them: the
 * variant file is chosen by dtype, external data is found beside the graph on both
 * runtimes, and refusals name what is there.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createNodeEngine } from '../../../src/runtime/node/engine.js';
import { collectGeneration } from '../../helpers/model.js';
import { referenceGreedy, removeFixtureFolders, writeFixtureFolder } from '../../helpers/byom-fixtures.js';

afterAll(removeFixtureFolders);

const PROMPT = [72, 101, 108, 108, 111, 44, 32, 119];
const expected = referenceGreedy(PROMPT, 12).tokenIds;
const greedy = { temperature: 0, maxTokens: 12, ignoreEos: true };

async function greedyIds(modelDir: string, options: Parameters<typeof createNodeEngine>[0] extends infer O ? Partial<O> : never = {}) {
  const engine = await createNodeEngine({ modelDir, ...options });
  try {
    return (await collectGeneration(engine, PROMPT, greedy)).tokenIds;
  } finally {
    await engine.dispose();
  }
}

describe('choosing the file of a model folder', () => {
  it('serves the only variant of a folder (onnx/model_q4.onnx) without any setting', async () => {
    const dir = await writeFixtureFolder({ files: ['onnx/model_q4.onnx'] });
    expect(await greedyIds(dir)).toEqual(expected);
  });

  it('serves the variant the dtype setting names', async () => {
    const dir = await writeFixtureFolder({ files: ['onnx/model_fp16.onnx', 'onnx/model_q4f16.onnx'] });
    expect(await greedyIds(dir, { dtype: 'q4f16' })).toEqual(expected);
  });

  it('serves a legacy onnx/decoder_model_merged.onnx', async () => {
    const dir = await writeFixtureFolder({ files: ['onnx/decoder_model_merged.onnx'], layout: { useCacheBranch: true } });
    expect(await greedyIds(dir)).toEqual(expected);
  });

  it('refuses at startup a folder of several variants and no fp32, listing them', async () => {
    const dir = await writeFixtureFolder({ files: ['onnx/model_q4.onnx', 'onnx/model_fp16.onnx'] });
    await expect(createNodeEngine({ modelDir: dir })).rejects.toThrow(
      `Cannot load the model in "${dir}": the model folder holds several model variants and no fp32 one: ` +
        'fp16 (onnx/model_fp16.onnx), q4 (onnx/model_q4.onnx). Choose one with the "dtype" setting (MODEL_DTYPE)',
    );
  });

  it('refuses a dtype the folder lacks', async () => {
    const dir = await writeFixtureFolder({ files: ['onnx/model_q4.onnx'] });
    await expect(createNodeEngine({ modelDir: dir, dtype: 'fp16' })).rejects.toThrow(
      'dtype "fp16" asks for onnx/model_fp16.onnx or onnx/decoder_model_merged_fp16.onnx, which the model folder does not have; variants present: q4 (onnx/model_q4.onnx).',
    );
  });
});

describe.each(['native', 'wasm'] as const)('external data on %s onnxruntime', (backend) => {
  it('loads weights from one model.onnx_data beside the graph, whatever the working directory', async () => {
    const dir = await writeFixtureFolder({ externalDataMaxFileBytes: Infinity });
    expect(await greedyIds(dir, { backend })).toEqual(expected);
  });

  it('loads weights split over several data files', async () => {
    const dir = await writeFixtureFolder({ files: ['onnx/model_fp16.onnx'], externalDataMaxFileBytes: 20_000 });
    expect(await greedyIds(dir, { backend })).toEqual(expected);
  });
});
