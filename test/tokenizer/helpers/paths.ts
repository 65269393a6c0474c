/** Where the tokenizer tests find their input files (paths relative to the repository root). */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const SHARED_MODELS = join(REPO_ROOT, '..', 'shared', 'models');

function requireFile(path: string, what: string): Uint8Array {
  if (!existsSync(path)) {
    throw new Error(`${what} not found at ${path} (expected beside the repository, ../shared/models/ from its root)`);
  }
  return readFileSync(path);
}

export function readTok512(): Uint8Array {
  return requireFile(join(SHARED_MODELS, 'stories260K', 'tok512.bin'), 'the stories260K tokenizer tok512.bin');
}

export function readLlama2SentencepieceModel(): Uint8Array {
  return requireFile(join(SHARED_MODELS, 'llama2-tokenizer.model'), 'the Llama 2 tokenizer llama2-tokenizer.model');
}

export interface Golden {
  prompt: string;
  prompt_ids: number[];
  completion_ids: number[];
  completion_text: string;
}

export function readGolden(): Golden {
  return JSON.parse(readFileSync(join(REPO_ROOT, 'test', 'fixtures', 'golden-greedy.json'), 'utf8')) as Golden;
}

export const COMMITTED_MODEL_DIR = join(REPO_ROOT, 'models', 'stories260k');
