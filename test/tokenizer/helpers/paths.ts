/** Where the tokenizer tests find their input files: all committed under test/fixtures/. */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const FIXTURES = join(REPO_ROOT, 'test', 'fixtures');
const SENTENCEPIECE_32K = join(FIXTURES, 'sentencepiece-32k');

function requireFile(path: string, what: string): Uint8Array {
  if (!existsSync(path)) throw new Error(`${what} not found at ${path} (committed with the repository; is the clone complete?)`);
  return readFileSync(path);
}

export function readTok512(): Uint8Array {
  return requireFile(join(FIXTURES, 'stories260K', 'tok512.bin'), 'the stories260K tokenizer tok512.bin');
}

/**
 * A 32,000-piece SentencePiece BPE model of Llama 2's tokenizer shape, trained by
 * scripts/tokenizer/build_sentencepiece_32k.py (Llama 2's own is not ours to redistribute
 * without its licence's terms; see test/fixtures/sentencepiece-32k/README.md).
 */
export function readSentencepiece32kModel(): Uint8Array {
  return requireFile(join(SENTENCEPIECE_32K, 'tokenizer.model'), 'the 32k sentencepiece tokenizer');
}

/** @deprecated the old name, kept so branches written against it still build: same file. */
export const readLlama2SentencepieceModel = readSentencepiece32kModel;

/** What the sentencepiece library itself encodes with that model (BOS first). */
export function readSentencepiece32kEncodings(): { text: string; ids: number[] }[] {
  const file = requireFile(join(SENTENCEPIECE_32K, 'encodings.json'), 'the sentencepiece reference encodings');
  return (JSON.parse(new TextDecoder().decode(file)) as { encodings: { text: string; ids: number[] }[] }).encodings;
}

export interface Golden {
  prompt: string;
  prompt_ids: number[];
  completion_ids: number[];
  completion_text: string;
}

export function readGolden(): Golden {
  return JSON.parse(readFileSync(join(FIXTURES, 'golden-greedy.json'), 'utf8')) as Golden;
}

export const COMMITTED_MODEL_DIR = join(REPO_ROOT, 'models', 'stories260k');
