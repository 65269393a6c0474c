/**
 * Converts a llama2.c checkpoint and its tokenizer into a Hugging Face ONNX model folder.
 * Usage: npm run convert -- [--ops=fused|gqa|portable|inplace] [--dtype=fp32,fp16,q4] [--q4-accuracy=0..4] [--q4-embedding=blocks|float]
 *          [--all-logits] <checkpoint.bin> <tokenizer.bin> <outdir>
 * --dtype takes one or more weight storages (comma-separated), one graph file each
 * (onnx/model.onnx, model_fp16.onnx, model_q4.onnx); fp32 by default.
 * The graphs take num_logits_to_keep (logits for the last N positions only, 0: all), as
 * transformers.js' exports of some models do; --all-logits leaves it out (Optimum's inputs only).
 *
 *        npm run convert -- --from-gguf [--ops=...] <model.gguf> <outdir>
 * writes the model folder the server builds for a GGUF (src/gguf/): onnx/model.onnx in the
 * chosen flavour and its in-place KV twin onnx/model.inplace.onnx, weights dequantized to
 * float32 as ggml does, in external data files beside each graph.
 */
import { readFile } from 'node:fs/promises';
import { convertLlama2cModel, writeConvertedFiles } from '../src/convert/convert-llama2c-model.js';
import { parseConvertFlags } from './convert/convert-flags.js';
import { GRAPH_OPS } from '../src/graph/llama-onnx-graph.js';
import { WEIGHT_DTYPES } from '../src/graph/weight-dtype.js';
import { ggufGraphOptionsFromEnv, openGgufModelAt, writeGgufModelFolder } from '../src/gguf/node-gguf.js';

const USAGE =
  `usage: npm run convert -- --from-gguf [--ops=...] <model.gguf> <outdir>\n` +
  `       npm run convert -- [--ops=${GRAPH_OPS.join('|')}] [--dtype=${WEIGHT_DTYPES.join(',')}] [--q4-accuracy=0..4] [--q4-embedding=blocks|float] [--all-logits] ` +
  '<checkpoint.bin> <tokenizer.bin> <outdir>';

async function fromGguf(args: string[]): Promise<void> {
  const flags = args.filter((a) => a.startsWith('--') && a !== '--from-gguf');
  const positional = args.filter((a) => !a.startsWith('--'));
  const options = parseConvertFlags(flags);
  if (typeof options === 'string' || positional.length !== 2 || flags.some((flag) => !flag.startsWith('--ops='))) {
    console.error(`${typeof options === 'string' ? `${options}\n` : ''}usage: npm run convert -- --from-gguf [--ops=${GRAPH_OPS.join('|')}] <model.gguf> <outdir>`);
    process.exitCode = 2;
    return;
  }
  const [ggufPath, outDir] = positional;
  const model = await openGgufModelAt(ggufPath);
  const ops = options.ops ?? 'fused';
  // GGUF_WEIGHTS / GGUF_ACCURACY_LEVEL as when serving the file.
  const execution = await writeGgufModelFolder(ggufPath, model, outDir, [
    { file: 'onnx/model.onnx', ops },
    ...(ops === 'inplace' ? [] : [{ file: 'onnx/model.inplace.onnx', ops: 'inplace' as const }]),
  ], ggufGraphOptionsFromEnv());
  console.log(`${outDir}: ${model.shape.architecture}, graphs onnx/model.onnx (${ops})${ops === 'inplace' ? '' : ' and onnx/model.inplace.onnx'}\n${execution.join('\n')}`);
}

async function main(args: string[]): Promise<void> {
  if (args.includes('--from-gguf')) return fromGguf(args);
  const options = parseConvertFlags(args.filter((a) => a.startsWith('--')));
  const positional = args.filter((a) => !a.startsWith('--'));
  if (typeof options === 'string') {
    console.error(`${options}\n${USAGE}`);
    process.exitCode = 2;
    return;
  }
  if (positional.length !== 3) {
    console.error(USAGE);
    process.exitCode = 2;
    return;
  }
  const [checkpointPath, tokenizerPath, outDir] = positional;
  const files = convertLlama2cModel(await readFile(checkpointPath), await readFile(tokenizerPath), options);
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
