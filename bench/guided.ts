/**
 * Structured-output cost on the embedded model: `npx tsx bench/guided.ts`.
 *
 * - mask: time per generated token spent in the guide (XGrammar's bitmask, the UTF-8
 *   filter, masking the logits row, advancing the matcher), replayed over real outputs;
 * - decode: tokens/s of one request with and without guided_json on the same schema,
 *   same length (the unguided run ignores EOS and is cut at the guided run's length).
 * Each figure is the median of RUNS runs.
 */
import { compileGuide, warmUpGuidedDecoding } from '../src/guided/compile-guide.js';
import type { GuideFactory } from '../src/guided/guide.js';
import type { LocalEngine } from '../src/engine/local-engine.js';
import { createNodeEngine } from '../src/runtime/node/engine.js';
import { defaultSamplingParams, type SamplingParams } from '../src/sampling/params.js';
import { median } from './stats.js';

const RUNS = 5;
const SCHEMA = {
  type: 'object',
  properties: {
    title: { type: 'string', minLength: 20, maxLength: 40 },
    story: { type: 'string', minLength: 300, maxLength: 400 },
    rating: { type: 'integer', minimum: 1, maximum: 5 },
    tags: { type: 'array', items: { enum: ['happy', 'sad', 'funny'] }, minItems: 2, maxItems: 3 },
  },
  required: ['title', 'story', 'rating', 'tags'],
};

async function generate(engine: LocalEngine, prompt: number[], params: Partial<SamplingParams>) {
  const tokenIds: number[] = [];
  let text = '';
  const start = performance.now();
  for await (const delta of engine.generate({ promptTokenIds: prompt, params: defaultSamplingParams({ temperature: 1, ...params }) })) {
    tokenIds.push(...delta.tokenIds);
    text += delta.text;
  }
  return { tokenIds, text, seconds: (performance.now() - start) / 1000 };
}

/** Microseconds per token spent in the guide while replaying `tokenIds`. */
function maskCost(factory: GuideFactory, tokenIds: number[], vocabSize: number): number {
  const logits = new Float32Array(vocabSize);
  const guide = factory.createGuide();
  const start = performance.now();
  for (const id of tokenIds) {
    logits.fill(0);
    guide.maskLogits(logits);
    guide.accept(id);
  }
  const micros = ((performance.now() - start) * 1000) / tokenIds.length;
  guide.dispose();
  return micros;
}

const engine = await createNodeEngine({ modelDir: 'models/stories260k' });
const prompt = engine.tokenizer.encode('Once upon a time');
await warmUpGuidedDecoding(engine.tokenizer); // starts XGrammar, prepares the vocabulary
const compileStart = performance.now();
const guide = await compileGuide({ kind: 'json', schema: SCHEMA }, engine.tokenizer);
const compileMs = performance.now() - compileStart;
await generate(engine, prompt, { maxTokens: 32, seed: 0n }); // warm-up

const guided: number[] = [];
const plain: number[] = [];
const masks: number[] = [];
const lengths: number[] = [];
for (let run = 0; run < RUNS; run++) {
  const seed = BigInt(run + 1);
  const withGuide = await generate(engine, prompt, { maxTokens: 400, seed, guide });
  JSON.parse(withGuide.text); // the schema's lengths make it finish well before 400 tokens
  const without = await generate(engine, prompt, { maxTokens: withGuide.tokenIds.length, seed, ignoreEos: true });
  guided.push(withGuide.tokenIds.length / withGuide.seconds);
  plain.push(without.tokenIds.length / without.seconds);
  lengths.push(withGuide.tokenIds.length);
  for (let i = 0; i < 20; i++) masks.push(maskCost(guide, withGuide.tokenIds, engine.info.vocabSize));
}
await engine.dispose();

const result = {
  model: 'stories260k',
  vocabSize: engine.info.vocabSize,
  schemaCompileMs: Number(compileMs.toFixed(1)),
  outputTokens: median(lengths),
  maskMicrosPerToken: Number(median(masks).toFixed(2)),
  decodeTokensPerSecond: { guided: Math.round(median(guided)), unguided: Math.round(median(plain)) },
};
console.log(JSON.stringify(result, null, 2));
