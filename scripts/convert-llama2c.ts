/**
 * Converts a llama2.c checkpoint and its tokenizer into a Hugging Face ONNX model folder.
 * Usage: npm run convert -- <checkpoint.bin> <tokenizer.bin> <outdir>
 */
import { readFile } from 'node:fs/promises';
import { convertLlama2cModel, writeConvertedFiles } from './convert/convert-llama2c-model.js';

async function main(args: string[]): Promise<void> {
  if (args.length !== 3) {
    console.error('usage: npm run convert -- <checkpoint.bin> <tokenizer.bin> <outdir>');
    process.exitCode = 2;
    return;
  }
  const [checkpointPath, tokenizerPath, outDir] = args;
  const files = convertLlama2cModel(await readFile(checkpointPath), await readFile(tokenizerPath));
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
