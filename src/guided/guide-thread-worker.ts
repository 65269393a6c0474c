import { parentPort } from 'node:worker_threads';
import type { CompiledGrammar, GrammarCompiler } from '@mlc-ai/web-xgrammar';
import { GuidedDecodingError } from './errors.js';
import { grammarVocabulary, type GrammarVocabulary } from './grammar-work.js';
import { MASK_FAILED, MASK_READY, SLOT_MASK_OFFSET, SLOT_STATE, type FromGuideThread, type ToGuideThread } from './guide-thread-protocol.js';
import { requestGrammar } from './request-grammar.js';
import type { TokenVocabulary } from './token-vocabulary.js';
import { BitmaskReader } from './xgrammar-bitmask.js';
import type { MatcherHandle } from './xgrammar-guide.js';
import type { XGrammarApi } from './xgrammar-api.js';
import { loadXGrammarInNode } from './xgrammar-node-loader.js';

/*
 * The guide thread (guide-thread.ts starts it): one XGrammar instance for one vocabulary.
 * Compiles constraints (our conversion to EBNF, then XGrammar's compile) and runs every
 * matcher on their grammars; writes each guide's next token mask into its shared slot as
 * soon as a token is accepted. Messages are handled in order, one at a time.
 */

type MatcherConstructor = new (compiled: unknown, stopTokens: undefined, terminateWithoutStop: boolean, maxRollback: number) => MatcherHandle;

interface Grammar {
  compiled: CompiledGrammar;
  key: string;
  /** Factories on the loop holding this grammar. */
  refs: number;
}

interface ThreadGuide {
  matcher: MatcherHandle;
  state: Int32Array;
  words: Int32Array;
}

const port = parentPort!;
let api: XGrammarApi;
let compiler: GrammarCompiler;
let reader: BitmaskReader;
let matcherClass: MatcherConstructor | null = null;
let vocabulary: TokenVocabulary;
let workVocabulary: GrammarVocabulary;
let nextGrammar = 1;
const grammars = new Map<number, Grammar>();
const byKey = new Map<string, number>();
const guides = new Map<number, ThreadGuide>();
let started: Promise<void> | null = null;

const send = (message: FromGuideThread) => port.postMessage(message);
const cpu = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

async function start(words: TokenVocabulary): Promise<void> {
  vocabulary = words;
  workVocabulary = grammarVocabulary(words.size, words.bytes);
  // Started through tsx (tests, development), this thread's bootstrap leaves CommonJS's
  // `module` and `exports` as globals; the package's UMD wrapper would then put its API on
  // them instead of globalThis.xgrammar, where the loader finds it.
  const g = globalThis as Record<string, unknown>;
  for (const name of ['module', 'exports']) if (name in g) delete g[name];
  const runtime = await loadXGrammarInNode();
  api = runtime.api;
  reader = new BitmaskReader(runtime.memories);
  const info = await api.TokenizerInfo.createTokenizerInfo([...words.encoded], words.type, words.prependSpace, words.size, [...words.stopTokenIds]);
  // Our cache (by grammar key, below) is the one that counts; XGrammar's would keep every grammar.
  compiler = await api.GrammarCompiler.createGrammarCompiler(info, false);
}

function isTrap(error: unknown): boolean {
  return error instanceof WebAssembly.RuntimeError;
}

/** Set once XGrammar trapped: nothing in this instance can be trusted. */
let dead: string | null = null;

/**
 * XGrammar trapped: every guide fails, later messages are refused, and the loop ends this
 * thread and starts a new one once it has read this (a message posted just before exiting
 * could be lost, so the thread does not end itself).
 */
function trapped(error: unknown): void {
  if (dead !== null) return;
  dead = (error as Error).message;
  for (const guide of guides.values()) fail(guide);
  send({ type: 'trapped', message: dead });
}

function fail(guide: ThreadGuide): void {
  Atomics.store(guide.state, SLOT_STATE, MASK_FAILED);
  Atomics.notify(guide.state, SLOT_STATE);
}

async function compile(id: number, message: Extract<ToGuideThread, { type: 'compile' }>): Promise<void> {
  const before = cpu();
  let grammar;
  try {
    grammar = requestGrammar(message.request, message.limits, workVocabulary);
  } catch (error) {
    if (error instanceof GuidedDecodingError) return send({ type: 'refused', id, message: error.message, trapped: false });
    return send({ type: 'failed', id, message: (error as Error).message });
  }
  const known = byKey.get(grammar.key);
  if (known !== undefined) {
    grammars.get(known)!.refs += 1;
    return send({ type: 'compiled', id, grammar: known, cpuMs: cpu() - before });
  }
  let compiled: CompiledGrammar;
  try {
    compiled = await compiler.compileGrammar(grammar.ebnf);
    if (matcherClass === null) {
      // The package only creates matchers asynchronously; its embind class does so directly.
      const probe = await api.GrammarMatcher.createGrammarMatcher(compiled);
      matcherClass = (probe as unknown as { handle: MatcherHandle }).handle.constructor as MatcherConstructor;
      probe.dispose();
    }
  } catch (error) {
    if (!isTrap(error)) return send({ type: 'failed', id, message: (error as Error).message });
    send({ type: 'refused', id, message: `it is too complex for the grammar engine (XGrammar failed on it: ${(error as Error).message})`, trapped: true });
    return trapped(error);
  }
  const handle = nextGrammar++;
  grammars.set(handle, { compiled, key: grammar.key, refs: 1 });
  byKey.set(grammar.key, handle);
  send({ type: 'compiled', id, grammar: handle, cpuMs: cpu() - before });
}

function release(handle: number): void {
  const grammar = grammars.get(handle);
  if (grammar === undefined) return;
  grammar.refs -= 1;
  if (grammar.refs > 0) return;
  grammars.delete(handle);
  if (byKey.get(grammar.key) === handle) byKey.delete(grammar.key);
  // Matchers keep their own reference to the grammar.
  grammar.compiled.dispose();
}

/** Writes the matcher's next mask into the guide's slot and wakes whoever waits for it. */
function writeMask(guide: ThreadGuide): void {
  const vector = guide.matcher.GetNextTokenBitmask(vocabulary.size);
  try {
    reader.read(vector, guide.words);
  } finally {
    vector.delete();
  }
  Atomics.store(guide.state, SLOT_STATE, MASK_READY);
  Atomics.notify(guide.state, SLOT_STATE);
}

function createGuide(id: number, handle: number, slot: SharedArrayBuffer): void {
  const state = new Int32Array(slot, 0, SLOT_MASK_OFFSET);
  const words = new Int32Array(slot, SLOT_MASK_OFFSET * 4);
  const grammar = grammars.get(handle);
  if (grammar === undefined || matcherClass === null) {
    Atomics.store(state, SLOT_STATE, MASK_FAILED);
    Atomics.notify(state, SLOT_STATE);
    return;
  }
  const guide: ThreadGuide = { matcher: new matcherClass(grammar.compiled.handle, undefined, false, -1), state, words };
  guides.set(id, guide);
  writeMask(guide);
}

function accept(id: number, token: number): void {
  const guide = guides.get(id);
  if (guide === undefined) return;
  if (!guide.matcher.AcceptToken(token, false)) return fail(guide);
  if (guide.matcher.IsTerminated()) {
    Atomics.store(guide.state, SLOT_STATE, MASK_READY);
    Atomics.notify(guide.state, SLOT_STATE);
    return;
  }
  writeMask(guide);
}

function dispose(id: number): void {
  const guide = guides.get(id);
  if (guide === undefined) return;
  guides.delete(id);
  guide.matcher.delete();
}

async function handle(message: ToGuideThread): Promise<void> {
  if (dead !== null) {
    if (message.type === 'compile') send({ type: 'failed', id: message.id, message: `XGrammar trapped on this thread: ${dead}` });
    else if (message.type === 'guide') fail({ state: new Int32Array(message.slot, 0, SLOT_MASK_OFFSET) } as ThreadGuide);
    return;
  }
  switch (message.type) {
    case 'vocabulary':
      started = start(message.vocabulary);
      return started;
    case 'compile':
      await started;
      return compile(message.id, message);
    case 'release':
      return release(message.grammar);
    case 'guide':
      await started;
      return createGuide(message.guide, message.grammar, message.slot);
    case 'accept':
      for (let i = 0; i < message.accepted.length; i += 2) {
        try {
          accept(message.accepted[i], message.accepted[i + 1]);
        } catch (error) {
          if (isTrap(error)) trapped(error);
          const guide = guides.get(message.accepted[i]);
          if (guide !== undefined) fail(guide);
        }
      }
      return;
    case 'dispose':
      return dispose(message.guide);
  }
}

// One message at a time, in order: a compile's awaits must not let a later accept run on a half-built state.
let queue: Promise<void> = Promise.resolve();
port.on('message', (message: ToGuideThread) => {
  queue = queue.then(async () => {
    try {
      await handle(message);
    } catch (error) {
      if (isTrap(error)) trapped(error);
      const guide = 'guide' in message ? guides.get(message.guide) : undefined;
      if (guide !== undefined) fail(guide);
      if (message.type === 'compile') send({ type: 'failed', id: message.id, message: (error as Error).message });
      else if (guide === undefined) console.error(`guide thread: ${(error as Error).message}`);
    }
  });
});
