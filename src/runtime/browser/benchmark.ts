/**
 * A benchmark a visitor can run on their own device: the in-page engine decodes one greedy
 * sequence of a fixed length (EOS ignored) a few times, and reports the median decode
 * rate. Prefill (the first token) is timed apart, so the rate is per decode step, the
 * figure a KV cache kept on the GPU changes.
 */
import type { Engine } from '../../engine/types.js';
import { defaultSamplingParams } from '../../sampling/params.js';

export interface BenchmarkOptions {
  /** Tokens per run, the first one (prefill) included. */
  tokens?: number;
  runs?: number;
  /** Prompt token ids; the default is a short prompt of the embedded model's vocabulary. */
  promptTokenIds?: number[];
  /** Called after each run, for a progress line. */
  onRun?: (run: number, result: BenchmarkRun) => void;
}

export interface BenchmarkRun {
  /** Time to the first token (the prompt's forward pass and one sampling). */
  prefillMs: number;
  /** Decode steps per second after the first token. */
  stepsPerSecond: number;
}

export interface BenchmarkResult {
  tokens: number;
  runs: BenchmarkRun[];
  /** Medians over the runs. */
  prefillMs: number;
  stepsPerSecond: number;
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

export async function benchmarkEngine(engine: Engine, options: BenchmarkOptions = {}): Promise<BenchmarkResult> {
  const tokens = Math.max(2, options.tokens ?? 64);
  const runs: BenchmarkRun[] = [];
  // "Once upon a time" in the Llama 2 vocabulary of the embedded model: BOS + 4 tokens.
  const promptTokenIds = options.promptTokenIds ?? [1, 403, 407, 261, 378];
  const params = defaultSamplingParams({ maxTokens: tokens, temperature: 0, ignoreEos: true });
  for (let run = 0; run < (options.runs ?? 3); run++) {
    const started = performance.now();
    let first: number | undefined;
    let last = started;
    let count = 0;
    for await (const delta of engine.generate({ promptTokenIds, params })) {
      last = performance.now();
      first ??= last;
      count += delta.tokenIds.length;
    }
    if (first === undefined || count < 2) throw new Error(`the benchmark generated ${count} tokens instead of ${tokens}`);
    const result = { prefillMs: first - started, stepsPerSecond: ((count - 1) * 1000) / (last - first) };
    runs.push(result);
    options.onRun?.(run, result);
  }
  return {
    tokens,
    runs,
    prefillMs: median(runs.map((r) => r.prefillMs)),
    stepsPerSecond: median(runs.map((r) => r.stepsPerSecond)),
  };
}
