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
const choices = Array.from({ length: 2000 }, (_, i) => `choice number ${i} of many`);
const shapes: Array<[string, (i: number) => GuidedDecodingRequest]> = [
  ['audit regex (~110 B)', (i) => ({ kind: 'regex', pattern: nonce(i) + audit })],
  [`word repeat ${widestWordRepeat()}`, (i) => ({ kind: 'regex', pattern: nonce(i) + widestWordRepeat() })],
  [`any char ${widestAnyChar()}`, (i) => ({ kind: 'regex', pattern: nonce(i) + widestAnyChar() })],
  ['long regex: 300 alternatives', (i) => ({ kind: 'regex', pattern: nonce(i) + '(' + Array.from({ length: 300 }, (_, k) => `word${k}[0-9]{2}`).join('|') + ')' })],
  ['schema, 20 properties', (i) => ({ kind: 'json', schema: { ...properties(20), title: nonce(i) } })],
  ['schema, 300 properties', (i) => ({ kind: 'json', schema: { ...properties(300), title: nonce(i) } })],
  ['schema, 1000 properties', (i) => ({ kind: 'json', schema: { ...properties(1000), title: nonce(i) } })],
  ['2000 choices', (i) => ({ kind: 'choice', choices: [nonce(i), ...choices] })],
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
