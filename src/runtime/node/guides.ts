import type { Engine } from '../../engine/types.js';
import { compileGuide, xgrammarBrokenReason } from '../../guided/index.js';
import type { GuideCompiler } from '../../http/guided-decoding.js';

/**
 * Structured output under Node: src/guided on XGrammar with its Node loader (the
 * default). Kept out of src/http so that bundles of the app for other runtimes (the
 * playground's in-page engine, the Worker) do not pull in the Node loader.
 */
/**
 * Compiles guided-decoding requests for `engine`'s tokenizer (cached per distinct
 * constraint). XGrammar starts on the first call, not before (src/runtime/node/main.ts).
 */
export function nodeGuideCompiler(engine: Engine): GuideCompiler {
  // The logits row length: the engine's, which may pad the tokenizer's vocabulary.
  const options = { vocabSize: engine.info.vocabSize };
  const compile: GuideCompiler = (request, limits) => compileGuide(request, engine.tokenizer, { ...options, limits });
  compile.brokenReason = xgrammarBrokenReason;
  return compile;
}
