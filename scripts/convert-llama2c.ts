/**
 * Converts a llama2.c checkpoint and its tokenizer into a Hugging Face ONNX model folder.
 * Usage: npm run convert -- [--ops=fused|gqa|portable|inplace] <checkpoint.bin> <tokenizer.bin> <outdir>
 */
import { readFile } from 'node:fs/promises';
import { convertLlama2cModel, writeConvertedFiles } from './convert/convert-llama2c-model.js';
import { GRAPH_OPS, type GraphOps } from './convert/llama-onnx-graph.js';

const USAGE = `usage: npm run convert -- [--ops=${GRAPH_OPS.join('|')}] <checkpoint.bin> <tokenizer.bin> <outdir>`;

async function main(args: string[]): Promise<void> {
  const flags = args.filter((a) => a.startsWith('--'));
  const positional = args.filter((a) => !a.startsWith('--'));
  let ops: GraphOps = 'fused';
  for (const flag of flags) {
    const value = flag.startsWith('--ops=') ? flag.slice('--ops='.length) : null;
    if (value === null || !(GRAPH_OPS as readonly string[]).includes(value)) {
      console.error(`unknown option ${flag}\n${USAGE}`);
      process.exitCode = 2;
      return;
    }
    ops = value as GraphOps;
  }
  if (positional.length !== 3) {
    console.error(USAGE);
    process.exitCode = 2;
    return;
  }
  const [checkpointPath, tokenizerPath, outDir] = positional;
  const files = convertLlama2cModel(await readFile(checkpointPath), await readFile(tokenizerPath), { ops });
  await writeConvertedFiles(outDir, files);
  for (const [path, contents] of Object.entries(files)) {
    const size = typeof contents === 'string' ? Buffer.byteLength(contents) : contents.byteLength;
    console.log(`${outDir}/${path} (${size} bytes)`);
  }
}

main(process.argv.slice(2)).catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
