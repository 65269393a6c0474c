import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { MODEL_FILE_PATHS, type ModelFiles } from '../engine/model-files.js';

async function readJson(path: string): Promise<Record<string, unknown>> {
  return JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
}

async function readOptionalJson(path: string): Promise<Record<string, unknown> | undefined> {
  try {
    return await readJson(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/** Reads a model directory in the Hugging Face ONNX layout (see engine/model-files.ts). */
export async function readModelDir(dir: string): Promise<ModelFiles> {
  try {
    const [config, generationConfig, tokenizerJson, tokenizerConfig, onnx] = await Promise.all([
      readJson(join(dir, MODEL_FILE_PATHS.config)),
      readOptionalJson(join(dir, MODEL_FILE_PATHS.generationConfig)),
      readJson(join(dir, MODEL_FILE_PATHS.tokenizerJson)),
      readJson(join(dir, MODEL_FILE_PATHS.tokenizerConfig)),
      readFile(join(dir, MODEL_FILE_PATHS.onnx)),
    ]);
    return { config, generationConfig, tokenizerJson, tokenizerConfig, onnx: new Uint8Array(onnx.buffer, onnx.byteOffset, onnx.byteLength) };
  } catch (error) {
    throw new Error(`Cannot load the model in "${dir}": ${(error as Error).message}`);
  }
}
