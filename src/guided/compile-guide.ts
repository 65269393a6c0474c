import type { CompiledGrammar, GrammarCompiler } from '@mlc-ai/web-xgrammar';
import { ProtocolError } from '../common/protocol-error.js';
import type { Tokenizer } from '../tokenizer/types.js';
import { GuidedDecodingError } from './errors.js';
import type { GuideFactory } from './guide.js';
import type { CompileGate } from './compile-gate.js';
import { DEFAULT_GUIDED_LIMITS, type GuidedLimits } from './limits.js';
import { requestGrammar } from './request-grammar.js';
import { guidedParam, type GuidedDecodingRequest } from './request.js';
import { grammarVocabulary, type GrammarVocabulary } from './grammar-work.js';
import { tokenVocabulary, type TokenVocabulary } from './token-vocabulary.js';
import { Utf8MaskFilter } from './utf8-filter.js';
import { BitmaskReader } from './xgrammar-bitmask.js';
import { XGrammarGuide, type GuideContext, type MatcherHandle } from './xgrammar-guide.js';
import { discardTrappedXGrammar, isWasmTrap, loadXGrammar } from './xgrammar-runtime.js';
import type { XGrammarApi } from './xgrammar-api.js';

type MatcherConstructor = new (compiled: unknown, stopTokens: undefined, terminateWithoutStop: boolean, maxRollback: number) => MatcherHandle;

export interface CompileGuideOptions {
  /** Logits row length when the model pads its vocabulary beyond the tokenizer's. */
  vocabSize?: number;
  /** What a constraint may ask for (the server's request bounds). */
  limits?: GuidedLimits;
  /** Where compiles wait their turn (compile-gate.ts); absent: at once. Cached constraints never wait. */
  gate?: CompileGate;
  /** Who asks (the gate's per-client share). */
  client?: string;
  /**
   * Where the grammar is built, compiled and matched when not on this thread (Node's
   * guide thread, guide-thread.ts); absent: XGrammar in this realm (workerd, the page).
   */
  thread?: GrammarThread;
}

/** A thread that turns constraints into guides off the event loop (guide-thread.ts's GuideThread). */
export interface GrammarThread {
  /** The factory compiled for this request as sent, if cached. */
  cached(key: string | null): Promise<GuideFactory> | undefined;
  compile(request: GuidedDecodingRequest, key: string | null, limits: GuidedLimits): Promise<GuideFactory>;
}

/** Compiled grammars kept per tokenizer (least recently used dropped first). */
export const GUIDE_CACHE_SIZE = 128;

interface TokenizerState {
  api: XGrammarApi;
  compiler: GrammarCompiler;
  context: GuideContext;
  /** The embind matcher class, so guides can be created synchronously. */
  matcherClass: MatcherConstructor | null;
  factories: Map<string, Promise<GuideFactory>>;
  /** The same factories by the request as sent (requestKey), so a repeat is found before any grammar work. */
  byRequest: Map<string, Promise<GuideFactory>>;
  /** Set once this state's XGrammar instance trapped. */
  discarded: boolean;
}

/** Per tokenizer and vocabulary size; replaced (everything dropped) when XGrammar traps. */
let states = new WeakMap<Tokenizer, Map<number, Promise<TokenizerState>>>();
/** The same states once started, for the synchronous look-up of a cached constraint. */
let startedStates = new WeakMap<Tokenizer, Map<number, TokenizerState>>();

/**
 * XGrammar's WebAssembly trapped (a grammar it could not take): its memory cannot be
 * trusted, so everything built on that instance is dropped and a new one started; guides
 * still running on the old one fail with their own requests.
 */
function onTrap(trapped: TokenizerState, error: unknown): void {
  if (trapped.discarded) return;
  trapped.discarded = true;
  states = new WeakMap();
  startedStates = new WeakMap();
  discardTrappedXGrammar(error);
}

const grammarFinalizer =
  typeof FinalizationRegistry === 'undefined' ? null : new FinalizationRegistry<CompiledGrammar>((compiled) => compiled.dispose());

interface Vocabularies {
  tokens: TokenVocabulary;
  /** What bounds a grammar's compile work on these tokens (maxGrammarWork). */
  grammar: GrammarVocabulary;
}

/** Per tokenizer and vocabulary size: built once, kept across XGrammar replacements. */
const vocabularies = new WeakMap<Tokenizer, Map<number, Vocabularies>>();

function vocabulariesOf(tokenizer: Tokenizer, vocabSize: number): Vocabularies {
  let bySize = vocabularies.get(tokenizer);
  if (!bySize) vocabularies.set(tokenizer, (bySize = new Map()));
  let found = bySize.get(vocabSize);
  if (!found) {
    const tokens = tokenVocabulary(tokenizer, vocabSize);
    found = { tokens, grammar: grammarVocabulary(vocabSize, tokens.bytes) };
    bySize.set(vocabSize, found);
  }
  return found;
}

async function createState(tokenizer: Tokenizer, vocabSize: number): Promise<TokenizerState> {
  const { api, memories } = await loadXGrammar();
  const vocabulary = vocabulariesOf(tokenizer, vocabSize).tokens;
  const info = await api.TokenizerInfo.createTokenizerInfo(
    [...vocabulary.encoded],
    vocabulary.type,
    vocabulary.prependSpace,
    vocabulary.size,
    [...vocabulary.stopTokenIds],
  );
  // XGrammar's own cache is keyed by grammar text; ours (per request key) sits in front.
  const compiler = await api.GrammarCompiler.createGrammarCompiler(info, false);
  const state: TokenizerState = {
    api,
    compiler,
    context: {
      vocabSize,
      reader: new BitmaskReader(memories),
      utf8: new Utf8MaskFilter(vocabulary),
      onTrap: (error) => onTrap(state, error),
    },
    matcherClass: null,
    factories: new Map(),
    byRequest: new Map(),
    discarded: false,
  };
  return state;
}

function tokenizerState(tokenizer: Tokenizer, vocabSize: number): Promise<TokenizerState> {
  let bySize = states.get(tokenizer);
  if (!bySize) states.set(tokenizer, (bySize = new Map()));
  let state = bySize.get(vocabSize);
  if (!state) {
    state = createState(tokenizer, vocabSize);
    state.then(
      (started) => {
        if (started.discarded) return;
        let started_ = startedStates.get(tokenizer);
        if (!started_) startedStates.set(tokenizer, (started_ = new Map()));
        started_.set(vocabSize, started);
      },
      () => bySize.delete(vocabSize),
    );
    bySize.set(vocabSize, state);
  }
  return state;
}

async function compileFactory(state: TokenizerState, request: GuidedDecodingRequest, ebnf: string): Promise<GuideFactory> {
  try {
    return await compileOnXGrammar(state, request, ebnf);
  } catch (error) {
    if (!isWasmTrap(error)) throw error;
    onTrap(state, error);
    const param = guidedParam(request);
    throw new ProtocolError(
      'invalid_request',
      `Invalid ${param}: it is too complex for the grammar engine (XGrammar failed on it: ${(error as Error).message}). Simplify the constraint.`,
      param,
    );
  }
}

async function compileOnXGrammar(state: TokenizerState, request: GuidedDecodingRequest, ebnf: string): Promise<GuideFactory> {
  const compiled = await state.compiler.compileGrammar(ebnf);
  if (state.matcherClass === null) {
    // The package only creates matchers asynchronously; its embind class does so directly.
    const probe = await state.api.GrammarMatcher.createGrammarMatcher(compiled);
    state.matcherClass = (probe as unknown as { handle: MatcherHandle }).handle.constructor as MatcherConstructor;
    probe.dispose();
  }
  const { matcherClass, context } = state;
  const factory: GuideFactory = {
    request,
    createGuide: () => new XGrammarGuide(new matcherClass(compiled.handle, undefined, false, -1), context),
  };
  // Matchers keep their own reference to the grammar, so it can go with the factory.
  grammarFinalizer?.register(factory, compiled);
  return factory;
}

/**
 * Compiles a guided-decoding request for a tokenizer, once: later calls with an equal
 * request get the cached factory. Refused requests (unsupported feature, invalid schema
 * or pattern, two kinds at once upstream) throw ProtocolError('invalid_request') naming
 * the problem and the request field.
 */
export async function compileGuide(
  request: GuidedDecodingRequest,
  tokenizer: Tokenizer,
  options: CompileGuideOptions = {},
): Promise<GuideFactory> {
  const vocabSize = options.vocabSize ?? tokenizer.vocabSize;
  const key = requestKey(request);
  const { thread } = options;
  if (thread !== undefined) {
    const cachedOnThread = thread.cached(key);
    if (cachedOnThread !== undefined) return cachedOnThread;
    const compileOnThread = () => thread.compile(request, key, options.limits ?? DEFAULT_GUIDED_LIMITS);
    return options.gate === undefined ? compileOnThread() : options.gate.run(options.client, compileOnThread);
  }
  const started = startedStates.get(tokenizer)?.get(vocabSize);
  const cached = key === null || started === undefined || started.discarded ? undefined : started.byRequest.get(key);
  if (cached !== undefined) {
    started!.byRequest.delete(key!); // re-inserted as most recently used
    started!.byRequest.set(key!, cached);
    return cached;
  }
  const compile = () => compileUncached(request, tokenizer, vocabSize, key, options.limits ?? DEFAULT_GUIDED_LIMITS);
  return options.gate === undefined ? compile() : options.gate.run(options.client, compile);
}

/** The request as sent, as a cache key; null when it cannot be one (a schema JSON cannot write). */
function requestKey(request: GuidedDecodingRequest): string | null {
  try {
    return JSON.stringify(request);
  } catch {
    return null;
  }
}

async function compileUncached(
  request: GuidedDecodingRequest,
  tokenizer: Tokenizer,
  vocabSize: number,
  key: string | null,
  limits: GuidedLimits,
): Promise<GuideFactory> {
  const param = guidedParam(request);
  let grammar;
  try {
    grammar = requestGrammar(request, limits, vocabulariesOf(tokenizer, vocabSize).grammar);
  } catch (error) {
    if (error instanceof GuidedDecodingError) throw new ProtocolError('invalid_request', `Invalid ${param}: ${error.message}.`, param);
    throw error;
  }
  const state = await tokenizerState(tokenizer, vocabSize);
  const { factories, byRequest } = state;
  let factory = factories.get(grammar.key);
  if (factory) {
    factories.delete(grammar.key); // re-inserted below as most recently used
  } else {
    factory = compileFactory(state, request, grammar.ebnf);
    factory.catch(() => factories.delete(grammar.key));
  }
  factories.set(grammar.key, factory);
  while (factories.size > GUIDE_CACHE_SIZE) factories.delete(factories.keys().next().value!);
  if (key !== null) {
    byRequest.set(key, factory);
    factory.catch(() => byRequest.delete(key));
    while (byRequest.size > GUIDE_CACHE_SIZE) byRequest.delete(byRequest.keys().next().value!);
  }
  return factory;
}

/**
 * Starts XGrammar and prepares the tokenizer's vocabulary ahead of the first guided
 * request (otherwise that request pays for it, ~100 ms).
 */
export async function warmUpGuidedDecoding(tokenizer: Tokenizer, options: CompileGuideOptions = {}): Promise<void> {
  await tokenizerState(tokenizer, options.vocabSize ?? tokenizer.vocabSize);
}
