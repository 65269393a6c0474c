/**
 * Bounds on a structured-output constraint, checked while it is turned into a grammar and
 * before XGrammar compiles it: XGrammar's compile runs synchronously on the caller's
 * thread (its WebAssembly cannot hand a compiled grammar to another thread), and a deep
 * schema can make it trap, so the size of what it is given is what bounds its time,
 * memory and stack. Server settings of the same names (src/config/bound-settings.ts).
 */
export interface GuidedLimits {
  /** Nesting of a schema's JSON value (objects and arrays), and of a regular expression's groups. */
  maxGuidedNestingDepth: number;
  /** Properties over all objects of a schema. */
  maxGuidedProperties: number;
  /** Largest repetition count: {m,n}, minLength / maxLength, minItems / maxItems. */
  maxGuidedRepetition: number;
  /** Characters of the grammar built (repetitions expanded): bounds its memory and build time. */
  maxGrammarChars: number;
  /**
   * XGrammar's estimated compile work, in token visits (src/guided/grammar-work.ts): its
   * compile holds the thread, and its time is set by the vocabulary size times the
   * grammar's character classes that accept many tokens' first bytes. The default keeps a
   * compile under about a second here: a "person" schema passes on a 150 K-token
   * vocabulary, `[\s\S]{200}` (3.7 s on Llama 2's 32 000 tokens) does not.
   */
  maxGrammarWork: number;
}

export const DEFAULT_GUIDED_LIMITS: GuidedLimits = {
  maxGuidedNestingDepth: 64,
  maxGuidedProperties: 1024,
  maxGuidedRepetition: 1000,
  maxGrammarChars: 48 * 1024,
  maxGrammarWork: 2_000_000,
};
