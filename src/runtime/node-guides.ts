import type { Engine } from '../engine/types.js';
import { compileGuide, warmUpGuidedDecoding, xgrammarBrokenReason } from '../guided/index.js';
import type { GuideCompiler } from '../http/guided-decoding.js';

/**
 * Structured output under Node: src/guided on XGrammar with its Node loader (the
 * default). Kept out of src/http so that bundles of the app for other runtimes (the
 * playground's in-page engine, the Worker) do not pull in the Node loader.
 */
function guideOptions(engine: Engine) {
  // The logits row length: the engine's, which may pad the tokenizer's vocabulary.
  return { vocabSize: engine.info.vocabSize };
}

/** Compiles guided-decoding requests for `engine`'s tokenizer (cached per distinct constraint). */
export function nodeGuideCompiler(engine: Engine): GuideCompiler {
  const options = guideOptions(engine);
  const compile: GuideCompiler = (request, limits) => compileGuide(request, engine.tokenizer, { ...options, limits });
  compile.brokenReason = xgrammarBrokenReason;
  return compile;
}

/**
 * Starts XGrammar and prepares the engine's vocabulary (~100 ms), so the first guided
 * request does not pay for it. Same options as nodeGuideCompiler, or it would prepare
 * a vocabulary nothing uses.
 */
export function warmUpNodeGuides(engine: Engine): Promise<void> {
  return warmUpGuidedDecoding(engine.tokenizer, guideOptions(engine));
}
