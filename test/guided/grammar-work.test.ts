import { describe, expect, it } from 'vitest';
import { convertLlama2cTokenizer } from '../../src/convert/llama2c-tokenizer.js';
import { compileGuide } from '../../src/guided/index.js';
import { estimateGrammarWork, grammarVocabulary, uniformGrammarVocabulary } from '../../src/guided/grammar-work.js';
import { requestGrammar } from '../../src/guided/request-grammar.js';
import { HfTokenizer } from '../../src/tokenizer/hf-tokenizer.js';
import { readSentencepiece32kModel } from '../tokenizer/helpers/paths.js';
import { readSentencepiecePieces, toLlama2cTokenizerBin } from '../tokenizer/helpers/sentencepiece-model.js';

const ascii = (text: string) => new TextEncoder().encode(text);

describe('estimated XGrammar compile work', () => {
  it('counts a class by the share of tokens whose first byte it accepts', () => {
    // A hundred tokens: eighty start with a letter, twenty with a digit.
    const tokens = Array.from({ length: 100 }, (_, i) => (i < 80 ? `${'abcdefgh'[i % 8]}x` : `${i % 10}`));
    const vocabulary = grammarVocabulary(100, tokens.map(ascii));
    const letters = estimateGrammarWork('root ::= [a-z]', vocabulary);
    const digits = estimateGrammarWork('root ::= [0-9]', vocabulary);
    const negatedDigits = estimateGrammarWork('root ::= [^0-9]', vocabulary);
    expect(letters).toBeGreaterThan(digits * 3);
    expect(negatedDigits).toBe(letters);
    // Classes inside a string literal are text, not classes.
    expect(estimateGrammarWork('root ::= "[a-z][a-z]"', vocabulary)).toBeLessThan(letters);
  });

  it('grows with repetitions of a wide class and with the vocabulary, far less with the grammar length', () => {
    const wide = (n: number) => requestGrammar({ kind: 'regex', pattern: `[\\s\\S]{${n}}` }).ebnf;
    const manyProperties = requestGrammar({
      kind: 'json',
      schema: { type: 'object', properties: Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`field_${i}`, { type: 'string' }])) },
    }).ebnf;
    const v32k = uniformGrammarVocabulary(32_000);
    expect(estimateGrammarWork(wide(200), v32k)).toBeGreaterThan(1.8 * estimateGrammarWork(wide(100), v32k));
    expect(estimateGrammarWork(wide(100), uniformGrammarVocabulary(64_000))).toBeGreaterThan(1.9 * estimateGrammarWork(wide(100), v32k));
    // The 200-property schema is the longer grammar, and the cheaper compile.
    expect(manyProperties.length).toBeGreaterThan(wide(200).length);
    expect(estimateGrammarWork(manyProperties, v32k)).toBeLessThan(estimateGrammarWork(wide(200), v32k) / 5);
  });

  it('lets an ordinary schema compile for a 32 000-token sentencepiece vocabulary (Llama 2 shaped) by default, and refuses a wide repetition naming the setting', async () => {
    const bin = toLlama2cTokenizerBin(readSentencepiecePieces(readSentencepiece32kModel()));
    const { tokenizerJson, tokenizerConfig } = convertLlama2cTokenizer(bin);
    const tokenizer = HfTokenizer.fromJson(tokenizerJson, tokenizerConfig);
    const person = {
      type: 'object',
      properties: {
        name: { type: 'string' },
        age: { type: 'integer', minimum: 0, maximum: 150 },
        tags: { type: 'array', items: { type: 'string' }, maxItems: 5 },
        address: { type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' }, zip: { type: 'string', pattern: '^[0-9]{5}$' } } },
      },
      required: ['name', 'age'],
    };
    const factory = await compileGuide({ kind: 'json', schema: person }, tokenizer);
    expect(typeof factory.createGuide).toBe('function');
    await expect(compileGuide({ kind: 'regex', pattern: '[\\s\\S]{200}' }, tokenizer)).rejects.toThrow(/maxGrammarWork/);
  }, 60_000);
});
