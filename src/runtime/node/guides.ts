import type { Engine } from '../../engine/types.js';
import { compileGuide, GUIDE_CACHE_SIZE, xgrammarBrokenReason } from '../../guided/index.js';
import type { GuideCompiler } from '../../http/guided-decoding.js';
import { CompileGate, DEFAULT_COMPILE_GATE_LIMITS, type CompileGateLimits } from '../../guided/compile-gate.js';
import { GuideThreadPool } from '../../guided/guide-thread.js';
import { tokenVocabulary } from '../../guided/token-vocabulary.js';

/**
 * Structured output under Node: src/guided on XGrammar on its own thread (guide-thread.ts):
 * constraints are turned into grammars, compiled and matched there, off the event loop.
 * Kept out of src/http so that bundles of the app for other runtimes (the playground's
 * in-page engine, the Worker) do not pull in Node's threads.
 */
/** Structured output's threads by default (guidedDecodingThreads). */
export const DEFAULT_GUIDED_THREADS = 2;

/**
 * Compiles guided-decoding requests for `engine`'s tokenizer (cached per distinct
 * constraint). The thread and XGrammar on it start on the first call, not before.
 * `threads` 0: XGrammar on the event loop, as workerd and the page run it.
 */
export function nodeGuideCompiler(engine: Engine, gateLimits: CompileGateLimits = DEFAULT_COMPILE_GATE_LIMITS, threads = DEFAULT_GUIDED_THREADS): GuideCompiler {
  // The logits row length: the engine's, which may pad the tokenizer's vocabulary.
  const vocabSize = engine.info.vocabSize;
  const onThread = threads > 0;
  let thread: GuideThreadPool | undefined;
  const guideThread = () => (thread ??= new GuideThreadPool(tokenVocabulary(engine.tokenizer, vocabSize), threads, GUIDE_CACHE_SIZE));
  const gate = new CompileGate(gateLimits, onThread ? () => thread?.crowded ?? false : true);
  const compile: GuideCompiler = (request, limits, client) =>
    compileGuide(request, engine.tokenizer, { vocabSize, gate, limits, client, thread: onThread ? guideThread() : undefined });
  compile.brokenReason = () => thread?.brokenReason() ?? xgrammarBrokenReason();
  return compile;
}
