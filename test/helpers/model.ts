import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createNodeEngine } from '../../src/runtime/node/engine.js';
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

type Collected = ReturnType<typeof summarize>;

function summarize(deltas: GenerationDelta[]) {
  const last = deltas.at(-1);
  return {
    deltas,
    tokenIds: deltas.flatMap((d) => d.tokenIds),
    text: deltas.map((d) => d.text).join(''),
    finishReason: last?.finishReason,
    stopReason: last?.stopReason,
  };
}

/** Runs one request to the end: every delta, and the tokens, text and finish of sequence 0. */
export async function collectGeneration(
  engine: Engine,
  promptTokenIds: number[],
  params: Partial<SamplingParams>,
  signal?: AbortSignal,
): Promise<Collected> {
  const deltas: GenerationDelta[] = [];
  for await (const delta of engine.generate({ promptTokenIds, params: defaultSamplingParams(params), signal })) deltas.push(delta);
  return summarize(deltas);
}

/**
 * A long greedy request (up to 400 tokens, EOS ignored) aborted once it has streamed
 * `abortAfter` tokens: the tokens it got and its finish reason.
 */
export async function generateUntilAborted(
  engine: Engine,
  promptTokenIds: number[],
  abortAfter = 5,
): Promise<{ tokens: number[]; finishReason: string | null | undefined }> {
  const controller = new AbortController();
  const tokens: number[] = [];
  let finishReason: string | null | undefined;
  for await (const delta of engine.generate({
    promptTokenIds,
    params: defaultSamplingParams({ temperature: 0, maxTokens: 400, ignoreEos: true }),
    signal: controller.signal,
  })) {
    tokens.push(...delta.tokenIds);
    finishReason = delta.finishReason;
    if (tokens.length === abortAfter) controller.abort();
  }
  return { tokens, finishReason };
}

/**
 * Runs one request per prompt, each submitted once the one before it has streamed its first
 * token, so every later request joins a batch that is already decoding. Arrival is tied to
 * the engine's progress rather than to a timer: on a fast machine a timer-staggered request
 * can arrive after the one before it has finished, and nothing overlaps.
 */
export async function collectJoiningMidway(
  engine: Engine,
  prompts: number[][],
  params: Partial<SamplingParams>,
): Promise<Collected[]> {
  const runs: Array<Promise<Collected>> = [];
  const start = (index: number): void => {
    if (index >= prompts.length) return;
    runs[index] = (async () => {
      const deltas: GenerationDelta[] = [];
      try {
        for await (const delta of engine.generate({ promptTokenIds: prompts[index], params: defaultSamplingParams(params) })) {
          deltas.push(delta);
          if (deltas.length === 1) start(index + 1);
        }
      } finally {
        if (deltas.length === 0) start(index + 1);
      }
      return summarize(deltas);
    })();
  };
  start(0);
  const results: Collected[] = [];
  // runs[i] exists once runs[i - 1] has streamed or ended, so each await finds it set.
  for (let i = 0; i < prompts.length; i++) results.push(await runs[i]);
  return results;
}
