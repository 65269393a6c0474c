/**
 * Writes the example LoRA adapter adapters/story (committed): a seeded random PEFT adapter
 * for models/stories260k, rank 4 on every projection, float16. It is not trained: it only
 * shows the format and moves the model's output. Usage: npx tsx scripts/make-example-adapter.ts [outdir]
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { readLlama2cCheckpoint } from '../src/convert/llama2c-checkpoint.js';
import { randomAdapter, writeAdapterDir } from './adapters/random-peft-adapter.js';

const SOURCE = fileURLToPath(new URL('../test/fixtures/stories260K/stories260K.bin', import.meta.url));

async function main(outDir = 'adapters/story'): Promise<void> {
  const ckpt = readLlama2cCheckpoint(await readFile(SOURCE));
  const adapter = randomAdapter(ckpt, { seed: 260, rank: 4, alpha: 8, dtype: 'F16', magnitude: 0.08 });
  await writeAdapterDir(outDir, adapter);
  console.log(`${outDir}: adapter_config.json, adapter_model.safetensors (${adapter.weights.byteLength} bytes)`);
}

main(process.argv[2]).catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
});
