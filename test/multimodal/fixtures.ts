/**
 * The vision-language fixtures built by scripts/multimodal/build_fixtures.py (seeded
 * random weights; references computed there with PIL, numpy and torch).
 */
import { readFileSync } from 'node:fs';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { loadImageCodecs } from '../../src/media/decode/codecs.js';
import { decodeJpegImage, decodePngImage } from '../../src/media/decode/image.js';
import type { DecodedImage } from '../../src/media/index.js';

// decodeFixtureImage calls the decoders directly; the server loads them with its first media request.
await loadImageCodecs();

export const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'multimodal');
export const SMOLVLM_DIR = join(FIXTURES, 'smolvlm');
export const LLAVA_DIR = join(FIXTURES, 'llava');
export const IMAGE_NAMES = ['tall.png', 'wide.jpg', 'small.png', 'other.png'] as const;

export interface ReferenceGeneration {
  question: string;
  images: string[];
  prompt_token_ids: number[];
  max_tokens: number;
  token_ids: number[];
  text: string;
  top_logprobs?: Array<{ token_id: number; logprob: number }>;
}

export interface Reference {
  images: Record<string, { rows?: number; cols?: number; shape: number[] }>;
  generations: ReferenceGeneration[];
  image_seq_len?: number;
  image_tokens?: number;
}

export function reference(family: 'smolvlm' | 'llava'): Reference {
  return JSON.parse(readFileSync(join(FIXTURES, `${family}-reference.json`), 'utf8')) as Reference;
}

export function referencePixels(family: 'smolvlm' | 'llava', image: string): Float32Array {
  const bytes = readFileSync(join(FIXTURES, `${family}-pixels-${image}.f32`));
  return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
}

export function imageBytes(name: string): Uint8Array {
  return new Uint8Array(readFileSync(join(FIXTURES, 'images', name)));
}

export function decodeFixtureImage(name: string): DecodedImage {
  const bytes = imageBytes(name);
  return name.endsWith('.png') ? decodePngImage(bytes, { maxPixels: 1e8 }) : decodeJpegImage(bytes, { maxPixels: 1e8 });
}

export function imageDataUrl(name: string): string {
  const type = name.endsWith('.png') ? 'image/png' : 'image/jpeg';
  return `data:${type};base64,${Buffer.from(imageBytes(name)).toString('base64')}`;
}

export function readJson(path: string): Record<string, unknown> {
  return JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
}

/** SmolVLM2's chat template, whose {"type": "video"} parts write <video>. */
export const SMOLVLM2_VIDEO_TEMPLATE =
  "<|im_start|>{% for message in messages %}{{message['role'] | capitalize}}{% if message['content'][0]['type'] == 'image' %}{{':'}}{% else %}{{': '}}{% endif %}" +
  "{% for line in message['content'] %}{% if line['type'] == 'text' %}{{line['text']}}{% elif line['type'] == 'image' %}{{ '<image>' }}{% elif line['type'] == 'video' %}{{ '<video>' }}{% endif %}{% endfor %}<end_of_utterance>\n{% endfor %}" +
  "{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}";

/**
 * For a describe block whose tests each break one file of a fixture folder: a function that
 * makes a fresh temporary copy of `source`; every copy is removed after the block.
 */
export function temporaryFolderCopies(prefix: string): (source: string) => Promise<string> {
  const dirs: string[] = [];
  afterAll(async () => {
    await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
  });
  return async (source) => {
    const dir = await mkdtemp(join(tmpdir(), prefix));
    dirs.push(dir);
    await cp(source, dir, { recursive: true });
    return dir;
  };
}

/**
 * A temporary copy of the SmolVLM fixture as a SmolVLM2 folder (model_type "smolvlm", the
 * video chat template), with `preprocessor` merged into its preprocessor_config.json.
 */
export async function smolvlm2Folder(preprocessor: Record<string, unknown> = {}): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'smolvlm2-'));
  await cp(SMOLVLM_DIR, dir, { recursive: true });
  const patch = async (file: string, fields: Record<string, unknown>) => {
    const json = JSON.parse(await readFile(join(dir, file), 'utf8')) as Record<string, unknown>;
    await writeFile(join(dir, file), JSON.stringify({ ...json, ...fields }));
  };
  await patch('config.json', { model_type: 'smolvlm' });
  await patch('tokenizer_config.json', { chat_template: SMOLVLM2_VIDEO_TEMPLATE });
  await patch('preprocessor_config.json', preprocessor);
  return dir;
}
