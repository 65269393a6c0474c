import { describe, expect, it } from 'vitest';
import { GrammarTooComplexError, GuidedDecodingError } from '../../src/guided/errors.js';
import { DEFAULT_GUIDED_LIMITS } from '../../src/guided/limits.js';
import { requestGrammar } from '../../src/guided/request-grammar.js';
import type { GuidedDecodingRequest } from '../../src/guided/request.js';

function refusal(request: GuidedDecodingRequest, limits = DEFAULT_GUIDED_LIMITS, vocabSize = 512): Error {
  try {
    requestGrammar(request, limits, vocabSize);
  } catch (error) {
    expect(error).toBeInstanceOf(GuidedDecodingError);
    return error as Error;
  }
  throw new Error('expected the constraint to be refused');
}

const person = {
  type: 'object',
  properties: { name: { type: 'string', maxLength: 20 }, age: { type: 'integer', minimum: 0, maximum: 120 } },
  required: ['name', 'age'],
};

describe('guided-decoding limits', () => {
  it('hold a grammar to maxGrammarWork by its wide character classes times the vocabulary, not by its length', () => {
    // A schema of ordinary size passes even on a 128 K-token vocabulary…
    const plainPerson = { ...person, properties: { ...person.properties, name: { type: 'string' } } };
    expect(requestGrammar({ kind: 'json', schema: plainPerson }, DEFAULT_GUIDED_LIMITS, 128_000).ebnf.length).toBeGreaterThan(500);
    // …but each character of a bounded string is a wide class of its own: maxLength 20 costs 20 of them.
    expect(refusal({ kind: 'json', schema: person }, DEFAULT_GUIDED_LIMITS, 128_000).message).toMatch(/maxGrammarWork/);
    expect(() => requestGrammar({ kind: 'json', schema: person }, DEFAULT_GUIDED_LIMITS, 32_000)).not.toThrow();
    const anything200 = { kind: 'regex', pattern: '[\\s\\S]{200}' } as const;
    expect(() => requestGrammar(anything200, DEFAULT_GUIDED_LIMITS, 512)).not.toThrow();
    const error = refusal(anything200, DEFAULT_GUIDED_LIMITS, 32_000);
    expect(error).toBeInstanceOf(GrammarTooComplexError);
    expect(error.message).toMatch(/too complex for this model's 32000-token vocabulary: .* more than the limit of 2000000 \(maxGrammarWork\)/);
    // Raised for such a model, the same pattern compiles.
    expect(() => requestGrammar(anything200, { ...DEFAULT_GUIDED_LIMITS, maxGrammarWork: 1e12 }, 32_000)).not.toThrow();
  });

  it('refuse nesting, properties and repetitions past their bounds without recursing', () => {
    let deep: unknown = { type: 'integer' };
    for (let i = 0; i < 100_000; i++) deep = { type: 'array', items: deep };
    expect(refusal({ kind: 'json', schema: deep as object }).message).toMatch(/maxGuidedNestingDepth/);
    const limits = { ...DEFAULT_GUIDED_LIMITS, maxGuidedProperties: 2, maxGuidedRepetition: 5 };
    expect(refusal({ kind: 'json', schema: { type: 'object', properties: { a: {}, b: {}, c: {} } } }, limits).message).toMatch(/more than 2 properties/);
    expect(refusal({ kind: 'regex', pattern: 'a{6}' }, limits).message).toMatch(/above 5 .*maxGuidedRepetition/);
    expect(refusal({ kind: 'json', schema: { type: 'array', maxItems: 6 } }, limits).message).toMatch(/maxItems.*above 5/);
    expect(refusal({ kind: 'json', schema: { type: 'string', pattern: 'x{9}' } }, limits).message).toMatch(/above 5/);
  });

  it('refuse lone surrogates anywhere in a constraint, and accept paired ones', () => {
    expect(refusal({ kind: 'choice', choices: ['ok', '\udbff'] }).message).toMatch(/lone UTF-16 surrogate/);
    expect(refusal({ kind: 'regex', pattern: 'a\ud800' }).message).toMatch(/lone UTF-16 surrogate/);
    expect(refusal({ kind: 'json', schema: { type: 'object', properties: { 'k\udc00': {} } } }).message).toMatch(/lone UTF-16 surrogate/);
    expect(() => requestGrammar({ kind: 'choice', choices: ['😀', 'ok'] })).not.toThrow();
  });
});
