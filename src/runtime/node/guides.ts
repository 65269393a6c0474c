import type { Engine } from '../../engine/types.js';
import { compileGuide, xgrammarBrokenReason } from '../../guided/index.js';
import type { GuideCompiler } from '../../http/guided-decoding.js';
import { CompileGate, DEFAULT_COMPILE_GATE_LIMITS, type CompileGateLimits } from '../../guided/compile-gate.js';

/**
 * Structured output under Node: src/guided on XGrammar with its Node loader (the
 * default). Kept out of src/http so that bundles of the app for other runtimes (the
 * playground's in-page engine, the Worker) do not pull in the Node loader.
 */
/**
 * Compiles guided-decoding requests for `engine`'s tokenizer (cached per distinct
 * constraint). XGrammar starts on the first call, not before (src/runtime/node/main.ts).
 */
export function nodeGuideCompiler(engine: Engine, gateLimits: CompileGateLimits = DEFAULT_COMPILE_GATE_LIMITS): GuideCompiler {
  // The logits row length: the engine's, which may pad the tokenizer's vocabulary.
  const options = { vocabSize: engine.info.vocabSize, gate: new CompileGate(gateLimits) };
  const compile: GuideCompiler = (request, limits, client) => compileGuide(request, engine.tokenizer, { ...options, limits, client });
  compile.brokenReason = xgrammarBrokenReason;
  return compile;
}
