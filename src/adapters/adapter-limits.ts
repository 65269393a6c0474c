/**
 * What an adapter may make the server hold before its files are trusted (issue 41, family
 * 10): its name (16 names of 1 MiB made every /v1/models answer 16 MiB), its path, and the
 * size of its two files, judged before they are read: the weights can be no larger than
 * lora_A and lora_B of every module the base model has, at maxLoraRank, in float32.
 */
import type { LoraGraphLayout } from './lora-graph.js';

/** Characters of an adapter's name (Hugging Face repo ids are at most 96). */
export const MAX_LORA_NAME_CHARS = 256;
/** Characters of the path (or URL) an adapter is loaded from. */
export const MAX_LORA_PATH_CHARS = 4096;
/** Bytes of adapter_config.json (PEFT writes ~1 KiB). */
export const MAX_ADAPTER_CONFIG_BYTES = 1024 * 1024;
/** Room for a safetensors header beyond the tensors' own bytes (names, dtypes, offsets, metadata). */
const HEADER_ROOM_BYTES = 1024 * 1024;

export interface AdapterFileLimits {
  maxConfigBytes: number;
  maxWeightsBytes: number;
}

/** The largest files an adapter for this base, at this rank, can have. */
export function adapterFileLimits(layout: LoraGraphLayout, maxRank: number): AdapterFileLimits {
  let values = 0;
  for (const target of layout.targets) for (const lane of target.lanes) values += maxRank * (target.inDim + lane.width);
  return { maxConfigBytes: MAX_ADAPTER_CONFIG_BYTES, maxWeightsBytes: 8 + HEADER_ROOM_BYTES + values * 4 };
}

/** Why a name cannot name an adapter, or null when it can. */
export function adapterNameProblem(name: string): string | null {
  if (name.length === 0) return 'an adapter name must not be empty';
  if (name.length > MAX_LORA_NAME_CHARS) return `an adapter name has at most ${MAX_LORA_NAME_CHARS} characters, got ${name.length}`;
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(name)) return 'an adapter name must not contain control characters';
  return null;
}

/** The refusal of a file past its bound, naming both. */
export function fileTooLarge(file: string, bytes: number, limit: number): Error {
  return new Error(`${file} has ${bytes} bytes, more than the ${limit} an adapter for this model at maxLoraRank can need`);
}
