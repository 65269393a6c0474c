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
}

export const DEFAULT_GUIDED_LIMITS: GuidedLimits = {
  maxGuidedNestingDepth: 64,
  maxGuidedProperties: 1024,
  maxGuidedRepetition: 1000,
  maxGrammarChars: 48 * 1024,
};
