/**
 * Structured output (guided decoding): token-level masks that keep every output inside a
 * JSON schema, a regular expression or a list of choices.
 *
 * Wiring: pickGuidedDecoding(body) → compileGuide(request, engine.tokenizer) → put the
 * factory in SamplingParams.guide; each sequence then creates its own Guide, the Sampler
 * masks logits with it first, and the sequence ends with "stop" once the grammar is done.
 */
export { compileGuide, warmUpGuidedDecoding, GUIDE_CACHE_SIZE, type CompileGuideOptions } from './compile-guide.js';
export type { Guide, GuideFactory, LogitsMask } from './guide.js';
export { GuidedDecodingError } from './errors.js';
export { MULTIPLE_GUIDED_KINDS_MESSAGE, pickGuidedDecoding, type GuidedDecodingFields } from './pick-guided-decoding.js';
export { requestGrammar, type RequestGrammar } from './request-grammar.js';
export { guidedParam, type GuidedDecodingRequest } from './request.js';
export { loadXGrammar, setXGrammarLoader, xgrammarBrokenReason } from './xgrammar-runtime.js';
export type { XGrammarLoader, XGrammarRuntime } from './xgrammar-api.js';
export { DEFAULT_GUIDED_LIMITS, type GuidedLimits } from './limits.js';
