import { alt, EbnfGrammar, literal } from './ebnf.js';
import { grammarTooLarge, grammarTooMuchWork, GrammarTooComplexError, GuidedDecodingError } from './errors.js';
import { estimateGrammarWork, uniformGrammarVocabulary, type GrammarVocabulary } from './grammar-work.js';
import { jsonObjectRule } from './json-grammar.js';
import { jsonSchemaToEbnf } from './json-schema-grammar.js';
import { DEFAULT_GUIDED_LIMITS, type GuidedLimits } from './limits.js';
import { parseRegex } from './regex-parser.js';
import { regexToEbnf } from './regex-grammar.js';
import type { GuidedDecodingRequest } from './request.js';

export interface RequestGrammar {
  ebnf: string;
  /** Identifies the grammar for caching: equal keys, equal grammars. */
  key: string;
}

/** The schema as a JSON value (parsing JSON text); throws GuidedDecodingError when it is not JSON. */
export function schemaValue(schema: object | string): unknown {
  if (typeof schema !== 'string') return schema;
  try {
    return JSON.parse(schema);
  } catch (error) {
    throw new GuidedDecodingError(`the JSON schema is not valid JSON: ${(error as Error).message}`);
  }
}

const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

/**
 * Walks a constraint's JSON value without recursion: refuses text that is not valid
 * Unicode (a lone surrogate can never be generated, and XGrammar would compile it into a
 * grammar that allows no token), nesting past maxGuidedNestingDepth and, for schemas,
 * more than maxGuidedProperties properties in all.
 */
function checkConstraintValue(value: unknown, limits: GuidedLimits, isSchema: boolean): void {
  const stack: Array<[unknown, number]> = [[value, 0]];
  let properties = 0;
  const text = (item: string) => {
    if (LONE_SURROGATE.test(item)) throw new GuidedDecodingError('it contains a lone UTF-16 surrogate, which is not valid Unicode text and can never be generated');
  };
  while (stack.length > 0) {
    const [item, depth] = stack.pop()!;
    if (typeof item === 'string') {
      text(item);
      continue;
    }
    if (item === null || typeof item !== 'object') continue;
    if (depth >= limits.maxGuidedNestingDepth) {
      throw new GrammarTooComplexError(`it is nested more than ${limits.maxGuidedNestingDepth} levels deep (maxGuidedNestingDepth)`);
    }
    if (Array.isArray(item)) {
      for (const inner of item) stack.push([inner, depth + 1]);
      continue;
    }
    const record = item as Record<string, unknown>;
    if (isSchema && record.properties !== null && typeof record.properties === 'object' && !Array.isArray(record.properties)) {
      properties += Object.keys(record.properties).length;
      if (properties > limits.maxGuidedProperties) {
        throw new GrammarTooComplexError(`it has more than ${limits.maxGuidedProperties} properties in all (maxGuidedProperties)`);
      }
    }
    for (const [key, inner] of Object.entries(record)) {
      text(key);
      stack.push([inner, depth + 1]);
    }
  }
}

/** The grammar text, refused when XGrammar's compile of it would take too long. */
function bounded(ebnf: string, limits: GuidedLimits, vocabulary: GrammarVocabulary | null): string {
  if (ebnf.length > limits.maxGrammarChars) throw grammarTooLarge(limits.maxGrammarChars);
  if (vocabulary) {
    const work = estimateGrammarWork(ebnf, vocabulary);
    if (work > limits.maxGrammarWork) throw grammarTooMuchWork(work, limits.maxGrammarWork, vocabulary.size);
  }
  return ebnf;
}

/** The EBNF grammar of the outputs `request` allows; throws GuidedDecodingError if it cannot (or must not). */
export function requestGrammar(
  request: GuidedDecodingRequest,
  limits: GuidedLimits = DEFAULT_GUIDED_LIMITS,
  /**
   * The vocabulary the grammar is compiled for, whose size and first bytes set XGrammar's
   * compile work (maxGrammarWork); a bare size assumes a typical spread; none skips the check.
   */
  vocabularyOrSize: GrammarVocabulary | number | null = null,
): RequestGrammar {
  const vocabulary = typeof vocabularyOrSize === 'number' ? uniformGrammarVocabulary(vocabularyOrSize) : vocabularyOrSize;
  const regexLimits = { maxRepetition: limits.maxGuidedRepetition, maxDepth: limits.maxGuidedNestingDepth };
  switch (request.kind) {
    case 'json': {
      const schema = schemaValue(request.schema);
      checkConstraintValue(schema, limits, true);
      return { ebnf: bounded(jsonSchemaToEbnf(schema, limits), limits, vocabulary), key: `json:${JSON.stringify(schema)}` };
    }
    case 'json_object': {
      const g = new EbnfGrammar();
      return { ebnf: g.toString(jsonObjectRule(g)), key: 'json_object' };
    }
    case 'regex': {
      if (typeof request.pattern !== 'string') throw new GuidedDecodingError('the regular expression must be a string');
      checkConstraintValue(request.pattern, limits, false);
      const g = new EbnfGrammar(limits.maxGrammarChars);
      const expr = regexToEbnf(parseRegex(request.pattern, regexLimits), 'raw', g, '""');
      return { ebnf: bounded(g.toString(expr), limits, vocabulary), key: `regex:${request.pattern}` };
    }
    case 'choice': {
      const { choices } = request;
      if (!Array.isArray(choices) || choices.length === 0 || choices.some((c) => typeof c !== 'string')) {
        throw new GuidedDecodingError('the choices must be a non-empty list of strings');
      }
      checkConstraintValue(choices, limits, false);
      return { ebnf: bounded(new EbnfGrammar(limits.maxGrammarChars).toString(alt(choices.map(literal))), limits, vocabulary), key: `choice:${JSON.stringify(choices)}` };
    }
    default:
      throw new GuidedDecodingError(`unknown guided decoding kind ${JSON.stringify((request as { kind: unknown }).kind)}`);
  }
}
