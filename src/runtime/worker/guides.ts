import type { Engine } from '../../engine/types.js';
import { compileGuide } from '../../guided/compile-guide.js';
import { CompileGate } from '../../guided/compile-gate.js';
import { setXGrammarLoader, xgrammarBrokenReason } from '../../guided/xgrammar-runtime.js';
import type { GuideCompiler } from '../../http/guided-decoding.js';
import { workerXGrammarLoader } from './xgrammar.js';

let loaderInstalled = false;

/**
 * Structured output in a Worker: src/guided's compileGuide, as under Node, with XGrammar
 * started from the uploaded precompiled module (worker-xgrammar.ts). XGrammar starts on
 * the first guided request, not with the engine: most requests never need it.
 */
export function workerGuideCompiler(engine: Engine): GuideCompiler {
  if (!loaderInstalled) {
    setXGrammarLoader(workerXGrammarLoader);
    loaderInstalled = true;
  }
  // The engine's logits row length, which may pad the tokenizer's vocabulary (as node-guides.ts does).
  // Compiles take turns, paced to half the isolate's thread (compile-gate.ts; default bounds).
  const options = { vocabSize: engine.info.vocabSize, gate: new CompileGate() };
  const compile: GuideCompiler = (request, limits, client) => compileGuide(request, engine.tokenizer, { ...options, limits, client });
  compile.brokenReason = xgrammarBrokenReason;
  return compile;
}
