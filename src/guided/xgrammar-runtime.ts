import type { XGrammarApi, XGrammarLoader, XGrammarRuntime } from './xgrammar-api.js';

/**
 * The one place that starts XGrammar (@mlc-ai/web-xgrammar: XGrammar compiled to
 * WebAssembly). It is started once per JS realm behind a single shared promise: the
 * package's own lazy start is not guarded, and two concurrent first calls would create two
 * WebAssembly instances whose handles do not mix.
 *
 * How to start it depends on the runtime. Node is the default (xgrammar-node-loader.ts);
 * a runtime entry (workerd, a browser bundle) installs its own loader with
 * setXGrammarLoader before the first use.
 */

let customLoader: XGrammarLoader | null = null;
let runtime: Promise<XGrammarRuntime> | null = null;
let instances = 0;
let lastApi: XGrammarApi | null = null;
/** Why XGrammar is unusable right now, or null: /health answers 503 while it is set. */
let brokenReason: string | null = null;

/** Replaces how XGrammar is started; only before its first use. */
export function setXGrammarLoader(loader: XGrammarLoader): void {
  if (runtime !== null) throw new Error('XGrammar is already started; set its loader before the first guided request');
  customLoader = loader;
}

/** Starts XGrammar on first call; every call shares the one instance. */
export function loadXGrammar(): Promise<XGrammarRuntime> {
  runtime ??= (customLoader ?? loadInNode)(instances).then(
    (started) => {
      if (started.api !== lastApi) brokenReason = null;
      lastApi = started.api;
      return started;
    },
    (error: unknown) => {
      runtime = null; // a later request may try again
      throw error;
    },
  );
  return runtime;
}

/** A WebAssembly trap (out-of-bounds access, stack exhaustion, unreachable): the instance's state cannot be trusted after it. */
export function isWasmTrap(error: unknown): boolean {
  return typeof WebAssembly !== 'undefined' && error instanceof WebAssembly.RuntimeError;
}

/**
 * Drops the trapped instance: later loads start a new one (where the loader can), and
 * until one is up XGrammar counts as broken. Starts the new one at once so that /health
 * recovers without waiting for a guided request.
 */
export function discardTrappedXGrammar(error: unknown): void {
  brokenReason = `structured output's grammar engine (XGrammar) trapped: ${(error as Error).message}`;
  console.error(`XGrammar trapped; starting a new instance: ${(error as Error).message}`);
  runtime = null;
  instances += 1;
  loadXGrammar().catch((failure: unknown) => {
    brokenReason = `XGrammar trapped and could not be restarted: ${(failure as Error).message}`;
  });
}

/** Null while XGrammar is usable (or not started); otherwise why it is not. */
export function xgrammarBrokenReason(): string | null {
  return brokenReason;
}

async function loadInNode(instance: number): Promise<XGrammarRuntime> {
  const { loadXGrammarInNode } = await import('./xgrammar-node-loader.js');
  return loadXGrammarInNode(instance);
}
