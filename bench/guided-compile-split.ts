/**
 * Where a structured-output compile's time goes (issue 41, family 5): our conversion of the
 * constraint to EBNF (src/guided/*-grammar.ts, with the maxGrammarWork estimate) against
 * XGrammar's compile of it, and what one token's mask step costs afterwards, for the
 * slowest request shapes the default bounds let through. CPU time of this thread
 * (process.cpuUsage is per process; nothing else runs here), so the figures hold on a
 * loaded machine; wall time beside it.
 *
 *   npx tsx bench/guided-compile-split.ts            (the 32 000-piece sentencepiece fixture, Llama 2 shaped)
 */
import { convertLlama2cTokenizer } from '../src/convert/llama2c-tokenizer.js';
import { compileGuide, warmUpGuidedDecoding } from '../src/guided/compile-guide.js';
import { requestGrammar } from '../src/guided/request-grammar.js';
import { grammarVocabulary } from '../src/guided/grammar-work.js';
import { tokenVocabulary } from '../src/guided/token-vocabulary.js';
import type { GuidedDecodingRequest } from '../src/guided/request.js';
import { DEFAULT_GUIDED_LIMITS } from '../src/guided/limits.js';
import { HfTokenizer } from '../src/tokenizer/hf-tokenizer.js';
import { readSentencepiece32kModel } from '../test/tokenizer/helpers/paths.js';
import { readSentencepiecePieces, toLlama2cTokenizerBin } from '../test/tokenizer/helpers/sentencepiece-model.js';
import { formatTable } from './stats.js';

const cpu = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};
function timed<T>(run: () => T): { value: T; cpuMs: number; wallMs: number } {
  const c = cpu();
  const w = performance.now();
  const value = run();
  return { value, cpuMs: cpu() - c, wallMs: performance.now() - w };
}
async function timedAsync<T>(run: () => Promise<T>): Promise<{ value: T; cpuMs: number; wallMs: number }> {
  const c = cpu();
  const w = performance.now();
  const value = await run();
  return { value, cpuMs: cpu() - c, wallMs: performance.now() - w };
}

const bin = toLlama2cTokenizerBin(readSentencepiecePieces(readSentencepiece32kModel()));
const { tokenizerJson, tokenizerConfig } = convertLlama2cTokenizer(bin);
const tokenizer = HfTokenizer.fromJson(tokenizerJson, tokenizerConfig);
const vocabSize = tokenizer.vocabSize;

const vocabularyPrep = timed(() => {
  const tokens = tokenVocabulary(tokenizer, vocabSize);
  return grammarVocabulary(vocabSize, tokens.bytes);
});
const start = await timedAsync(() => warmUpGuidedDecoding(tokenizer));
console.log(`vocabulary ${vocabSize}: our vocabulary tables ${vocabularyPrep.cpuMs.toFixed(0)} ms CPU; XGrammar start + TokenizerInfo (once per tokenizer) ${start.cpuMs.toFixed(0)} ms CPU`);
const grammarVocab = vocabularyPrep.value;

const nonce = (i: number) => `n${i}_`;
const properties = (n: number) => ({
  type: 'object',
  properties: Object.fromEntries(Array.from({ length: n }, (_, i) => [`field_${i}`, i % 3 === 0 ? { type: 'string', maxLength: 20 } : i % 3 === 1 ? { type: 'integer', minimum: 0, maximum: 9999 } : { enum: ['red', 'green', 'blue'] }])),
  required: Array.from({ length: n }, (_, i) => `field_${i}`),
});
/** The widest `(\w+ ){1,N}\w+` under maxGrammarWork on this vocabulary. */
function widestWordRepeat(): string {
  let best = '';
  for (let n = 1; n <= 200; n++) {
    const pattern = `(\\w+ ){1,${n}}\\w+`;
    try {
      requestGrammar({ kind: 'regex', pattern }, DEFAULT_GUIDED_LIMITS, grammarVocab);
      best = pattern;
    } catch {
      break;
    }
  }
  return best;
}
function widestAnyChar(): string {
  let best = '';
  for (let n = 1; n <= 400; n++) {
    const pattern = `[\\s\\S]{${n}}`;
    try {
      requestGrammar({ kind: 'regex', pattern }, DEFAULT_GUIDED_LIMITS, grammarVocab);
      best = pattern;
    } catch {
      break;
    }
  }
  return best;
}
const audit = `(\\w+ ){1,12}(cat|dog|bird)[0-9]{1,5}\\.(foo|bar|baz){1,3}[A-Z][a-z]{2,8}@[a-z]{3,10}\\.(com|org|net)[0-9a-f]{8}`;
const choices = Array.from({ length: 1500 }, (_, i) => `choice number ${i} of many`);
const shapes: Array<[string, (i: number) => GuidedDecodingRequest]> = [
  ['audit regex (~110 B)', (i) => ({ kind: 'regex', pattern: nonce(i) + audit })],
  [`word repeat ${widestWordRepeat()}`, (i) => ({ kind: 'regex', pattern: nonce(i) + widestWordRepeat() })],
  [`any char ${widestAnyChar()}`, (i) => ({ kind: 'regex', pattern: nonce(i) + widestAnyChar() })],
  ['long regex: 300 alternatives', (i) => ({ kind: 'regex', pattern: nonce(i) + '(' + Array.from({ length: 300 }, (_, k) => `word${k}[0-9]{2}`).join('|') + ')' })],
  ['schema, 20 properties', (i) => ({ kind: 'json', schema: { ...properties(20), title: nonce(i) } })],
  ['schema, 120 properties', (i) => ({ kind: 'json', schema: { ...properties(120), title: nonce(i) } })],
  ['1500 choices', (i) => ({ kind: 'choice', choices: [nonce(i), ...choices] })],
];

const rows: Array<Record<string, string | number>> = [];
let round = 0;
for (const [name, make] of shapes) {
  const conv: number[] = [];
  const total: number[] = [];
  let grammarChars = 0;
  let refused = '';
  for (let k = 0; k < 3; k++) {
    const request = make(round++);
    let conversion;
    try {
      conversion = timed(() => requestGrammar(request, DEFAULT_GUIDED_LIMITS, grammarVocab));
    } catch (error) {
      refused = (error as Error).message.slice(0, 60);
      break;
    }
    grammarChars = conversion.value.ebnf.length;
    conv.push(conversion.cpuMs);
    // compileGuide repeats the conversion, then XGrammar's compile.
    const whole = await timedAsync(() => compileGuide(make(round++), tokenizer));
    total.push(whole.cpuMs);
    if (k === 2) {
      // The per-token mask step: greedy through the grammar, first allowed token each time.
      const guide = whole.value.createGuide();
      const logits = new Float32Array(vocabSize);
      const c = cpu();
      let steps = 0;
      for (; steps < 64 && !guide.isTerminated(); steps++) {
        logits.fill(0);
        guide.maskLogits(logits);
        const mask = guide.allowedMask();
        // Prefer a non-stop token so the walk goes on.
        let token = -1;
        for (let w = mask.length - 1; w >= 0 && token < 0; w--) if (mask[w] !== 0) token = w * 32 + 31 - Math.clz32(mask[w]);
        if (token < 0) break;
        guide.accept(token);
      }
      const stepUs = ((cpu() - c) * 1000) / Math.max(1, steps);
      guide.dispose();
      rows.push({
        shape: name,
        'grammar chars': grammarChars,
        'ours ms': conv.sort((a, b) => a - b)[1],
        'XGrammar ms': Math.max(0, total.sort((a, b) => a - b)[1] - conv[1]),
        'ours share %': (100 * conv[1]) / total[1],
        'mask µs/token': stepUs,
      });
    }
  }
  if (refused) rows.push({ shape: name, 'grammar chars': 0, 'ours ms': 0, 'XGrammar ms': 0, 'ours share %': 0, 'mask µs/token': 0, refused } as never);
}
console.log(formatTable(rows));

// ---- The per-token cost on the event loop: XGrammar inline vs on the guide thread ----
// This thread's CPU (the kernel's schedstat), not the process's: the guide thread's work
// must not count. A 10 ms wait between tokens stands for the model's step, which the
// guide thread's mask computation overlaps.
const { readFileSync } = await import('node:fs');
const threadCpuMs = () => Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0]) / 1e6;
const { GuideThreadPool } = await import('../src/guided/guide-thread.js');
const pool = new GuideThreadPool(tokenVocabulary(tokenizer, vocabSize), 1, 128);
const walk = async (factory: import('../src/guided/guide.js').GuideFactory, steps: number, stepMs: number) => {
  const guide = factory.createGuide();
  const logits = new Float32Array(vocabSize);
  let cpuMs = 0;
  let waitMs = 0;
  let n = 0;
  for (; n < steps && !guide.isTerminated(); n++) {
    const pending = guide.pending?.() ?? null;
    if (pending !== null) {
      const w = performance.now();
      await pending;
      waitMs += performance.now() - w;
    }
    const c = threadCpuMs();
    logits.fill(0);
    guide.maskLogits(logits);
    const mask = guide.allowedMask();
    let token = -1;
    for (let w = mask.length - 1; w >= 0 && token < 0; w--) if (mask[w] !== 0) token = w * 32 + 31 - Math.clz32(mask[w]);
    if (token < 0) break;
    guide.accept(token);
    // The thread path sends the step's accepted tokens at the end of the task: counted here.
    await null;
    cpuMs += threadCpuMs() - c;
    await new Promise((resolve) => setTimeout(resolve, stepMs));
  }
  guide.dispose();
  return { cpuUs: (cpuMs * 1000) / Math.max(1, n), waitUs: (waitMs * 1000) / Math.max(1, n), steps: n };
};
const stepRows: Array<Record<string, string | number>> = [];
for (const [name, make] of [shapes[0], shapes[2], shapes[4]] as const) {
  const request = make(10_000 + round++);
  const inline = await compileGuide(request, tokenizer);
  const threaded = await compileGuide(request, tokenizer, { thread: pool });
  // Interleaved, three rounds each; medians.
  const a: number[] = [];
  const b: number[] = [];
  const waits: number[] = [];
  for (let r = 0; r < 3; r++) {
    a.push((await walk(inline, 48, 10)).cpuUs);
    const t = await walk(threaded, 48, 10);
    b.push(t.cpuUs);
    waits.push(t.waitUs);
  }
  const mid = (xs: number[]) => xs.sort((x, y) => x - y)[1];
  stepRows.push({ shape: name, 'loop µs/token inline': mid(a), 'loop µs/token thread': mid(b), 'thread ÷ inline': mid(b) / mid(a), 'mask wait µs/token': mid(waits) });
}
console.log(formatTable(stepRows));
pool.close();
process.exit(0);
