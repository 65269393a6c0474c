/**
 * A guided-decoding request that cannot be compiled: an unsupported feature, an invalid
 * schema or pattern, an unsatisfiable constraint. The message names the problem;
 * compileGuide turns it into a ProtocolError('invalid_request') for the client.
 */
export class GuidedDecodingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'GuidedDecodingError';
  }
}

/** A constraint whose grammar would take XGrammar too long (or too much memory) to compile. */
export class GrammarTooComplexError extends GuidedDecodingError {}

/** The refusal of a grammar past maxGrammarChars. */
export function grammarTooLarge(limit: number): GrammarTooComplexError {
  return new GrammarTooComplexError(
    `it is too complex: its grammar has more than ${limit} characters, the limit (maxGrammarChars); use smaller repetition counts or fewer alternatives`,
  );
}

/** The refusal of a grammar whose estimated compile work is past maxGrammarWork. */
export function grammarTooMuchWork(work: number, limit: number, vocabSize: number): GrammarTooComplexError {
  return new GrammarTooComplexError(
    `it is too complex for this model's ${vocabSize}-token vocabulary: compiling it would take about ${work} token visits, more than the limit of ${limit} (maxGrammarWork); use fewer or narrower character classes and smaller repetition counts (wide classes such as [\\s\\S] or \\w repeated many times cost the most)`,
  );
}
