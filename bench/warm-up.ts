/**
 * Warm-up before measuring, the same for every side of a comparison. A JavaScript engine
 * (ours, transformers.js) runs its per-token code unoptimized until V8 has seen it run
 * often: a fresh server's 32-token requests on the embedded model took ~1.6× the CPU of
 * the same requests after ~1600 steps (bench notes, session 9). So every side first
 * decodes WARM_UP_STEPS steps of one-request generation, or for WARM_UP_MAX_MS where steps
 * are slow (a 135M model's ~10–30 ms): the figures are those of a server that has been up.
 */
export const WARM_UP_STEPS = 2000;
export const WARM_UP_MAX_MS = 10_000;
const TOKENS_PER_REQUEST = 128;

/** Runs `generate(tokens, index)` (one request of `tokens` tokens) until the budget of steps or time is spent. */
export async function warmUp(generate: (tokens: number, index: number) => Promise<unknown>): Promise<void> {
  const started = performance.now();
  for (let steps = 0, index = 0; steps < WARM_UP_STEPS && performance.now() - started < WARM_UP_MAX_MS; index++) {
    await generate(TOKENS_PER_REQUEST, index);
    steps += TOKENS_PER_REQUEST;
  }
}

const BENCH_MODELS = ['stories260k', '135m-fp32', '135m-q4'] as const;

/**
 * BENCH_MODELS (comma-separated: stories260k, 135m-fp32, 135m-q4) picks the rows of the size and
 * Node-peer parts; default all. An unknown name is an error (a typo would otherwise run nothing).
 */
export function benchModelWanted(key: (typeof BENCH_MODELS)[number]): boolean {
  const setting = process.env.BENCH_MODELS;
  if (setting === undefined || setting.trim() === '') return true;
  const wanted = setting.split(',').map((name) => name.trim().toLowerCase());
  const unknown = wanted.filter((name) => !(BENCH_MODELS as readonly string[]).includes(name));
  if (unknown.length > 0) throw new Error(`BENCH_MODELS: unknown model ${unknown.join(', ')} (models: ${BENCH_MODELS.join(', ')})`);
  return wanted.includes(key);
}
