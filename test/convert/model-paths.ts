/** Where the tests find the shared source model and the committed converted one. */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { readLlama2cCheckpoint, type Llama2cCheckpoint } from '../../scripts/convert/llama2c-checkpoint.js';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** CI checks out shared/ beside the repository clone. */
export const SHARED_MODEL_DIR = join(REPO_ROOT, '..', 'shared', 'models', 'stories260K');
export const COMMITTED_MODEL_DIR = join(REPO_ROOT, 'models', 'stories260k');
export const COMMITTED_ONNX = join(COMMITTED_MODEL_DIR, 'onnx', 'model.onnx');

export function sharedModelFile(name: 'stories260K.bin' | 'tok512.bin' | 'golden-greedy.json'): string {
  const path = join(SHARED_MODEL_DIR, name);
  if (!existsSync(path)) {
    throw new Error(
      `shared model file missing: ${path}. These tests need the stories260K source files in ` +
        `../shared/models/stories260K/ relative to the repository root.`,
    );
  }
  return path;
}

export async function loadSharedCheckpoint(): Promise<Llama2cCheckpoint> {
  return readLlama2cCheckpoint(await readFile(sharedModelFile('stories260K.bin')));
}

export interface GoldenGreedy {
  prompt: string;
  prompt_ids: number[];
  completion_ids: number[];
}

/** The committed fixture (same content as the shared golden-greedy.json). */
export async function loadGolden(): Promise<GoldenGreedy> {
  return JSON.parse(await readFile(join(REPO_ROOT, 'test', 'fixtures', 'golden-greedy.json'), 'utf8')) as GoldenGreedy;
}
