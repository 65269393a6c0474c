import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createNodeEngine } from '../../src/runtime/node-engine.js';
import type { LocalEngine } from '../../src/engine/local-engine.js';
import type { Engine, GenerationDelta } from '../../src/engine/types.js';
import { defaultSamplingParams, type SamplingParams } from '../../src/sampling/params.js';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const MODEL_DIR = fileURLToPath(new URL('../../models/stories260k/', import.meta.url));

export interface Golden {
  prompt: string;
  prompt_ids: number[];
  completion_ids: number[];
  completion_text: string;
}

export const golden: Golden = JSON.parse(
  readFileSync(new URL('../fixtures/golden-greedy.json', import.meta.url), 'utf8'),
) as Golden;

const engines = new Map<string, Promise<LocalEngine>>();

/** One engine per backend per test file (vitest isolates files), created on first use. */
export function embeddedEngine(backend: 'native' | 'wasm' = 'native'): Promise<LocalEngine> {
  let engine = engines.get(backend);
  if (!engine) {
    engine = createNodeEngine({ modelDir: MODEL_DIR, backend });
    engines.set(backend, engine);
  }
  return engine;
}

/** Runs one request to the end: every delta, and the tokens, text and finish of sequence 0. */
export async function collectGeneration(
  engine: Engine,
  promptTokenIds: number[],
  params: Partial<SamplingParams>,
  signal?: AbortSignal,
) {
  const deltas: GenerationDelta[] = [];
  for await (const delta of engine.generate({ promptTokenIds, params: defaultSamplingParams(params), signal })) deltas.push(delta);
  const last = deltas.at(-1);
  return {
    deltas,
    tokenIds: deltas.flatMap((d) => d.tokenIds),
    text: deltas.map((d) => d.text).join(''),
    finishReason: last?.finishReason,
    stopReason: last?.stopReason,
  };
}
