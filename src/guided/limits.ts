/**
 * Bounds on a structured-output constraint, checked while it is turned into a grammar and
 * before XGrammar compiles it: XGrammar's compile runs synchronously on the caller's
 * thread (its WebAssembly cannot hand a compiled grammar to another thread), and a deep
 * schema can make it trap, so the size of what it is given is what bounds its time,
 * memory and stack. Server settings of the same names (src/config/request-bounds.ts).
 */
export interface GuidedLimits {
  /** Nesting of a schema's JSON value (objects and arrays), and of a regular expression's groups. */
  maxGuidedNestingDepth: number;
  /** Properties over all objects of a schema. */
  maxGuidedProperties: number;
  /** Largest repetition count: {m,n}, minLength / maxLength, minItems / maxItems. */
  maxGuidedRepetition: number;
  /**
   * Characters of the grammar built (repetitions expanded). On the embedded model
   * (512 tokens) XGrammar compiles ~48 K characters in ~0.2 s; its time grows with the
   * vocabulary, so large-vocabulary models want this lower.
   */
  maxGrammarChars: number;
  /**
   * Grammar characters × vocabulary tokens: XGrammar's compile time grows with both
   * (measured: a 38 K-character grammar compiles in ~0.2 s for 512 tokens and ~15 s for
   * Llama 2's 32 000), so a model's grammars are held to maxGrammarWork / its vocabulary
   * size characters as well. The default keeps a compile near 0.2–0.5 s on any vocabulary.
   */
  maxGrammarWork: number;
}

/** The grammar-size limit for a vocabulary: maxGrammarChars, lowered by maxGrammarWork for large ones. */
export function grammarCharsFor(limits: GuidedLimits, vocabSize: number): { limit: number; setting: string } {
  const byWork = Math.floor(limits.maxGrammarWork / Math.max(1, vocabSize));
  return byWork < limits.maxGrammarChars
    ? { limit: byWork, setting: `maxGrammarWork / the vocabulary's ${vocabSize} tokens` }
    : { limit: limits.maxGrammarChars, setting: 'maxGrammarChars' };
}

export const DEFAULT_GUIDED_LIMITS: GuidedLimits = {
  maxGuidedNestingDepth: 64,
  maxGuidedProperties: 1024,
  maxGuidedRepetition: 1000,
  maxGrammarChars: 48 * 1024,
  maxGrammarWork: 48 * 1024 * 512,
};
