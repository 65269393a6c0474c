/**
 * Where the tests find the stories260K source files (llama2.c checkpoint and tokenizer,
 * committed under test/fixtures/stories260K/) and the committed converted model. The names
 * say "shared" for the folder these files came from; they read only the repository.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { type DecoderCheckpoint } from '../../src/graph/decoder-checkpoint.js';
import { readLlama2cCheckpoint } from '../../src/convert/llama2c-checkpoint.js';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The source files as published (MIT; see the README there). */
export const SHARED_MODEL_DIR = join(REPO_ROOT, 'test', 'fixtures', 'stories260K');
export const COMMITTED_MODEL_DIR = join(REPO_ROOT, 'models', 'stories260k');
export const COMMITTED_ONNX = join(COMMITTED_MODEL_DIR, 'onnx', 'model.onnx');
const GOLDEN_PATH = join(REPO_ROOT, 'test', 'fixtures', 'golden-greedy.json');

export function sharedModelFile(name: 'stories260K.bin' | 'tok512.bin' | 'stories260K.gguf' | 'golden-greedy.json'): string {
  // The golden output lives one folder up, where the engine and workerd tests have always read it.
  const path = name === 'golden-greedy.json' ? GOLDEN_PATH : join(SHARED_MODEL_DIR, name);
  if (!existsSync(path)) throw new Error(`test fixture missing: ${path} (committed with the repository; is the clone complete?)`);
  return path;
}

export async function loadSharedCheckpoint(): Promise<DecoderCheckpoint> {
  return readLlama2cCheckpoint(await readFile(sharedModelFile('stories260K.bin')));
}

export interface GoldenGreedy {
  prompt: string;
  prompt_ids: number[];
  completion_ids: number[];
}

/** The reference implementation's greedy output, as published beside the checkpoint. */
export async function loadGolden(): Promise<GoldenGreedy> {
  return JSON.parse(await readFile(GOLDEN_PATH, 'utf8')) as GoldenGreedy;
}
