import type xgrammar from '@mlc-ai/web-xgrammar';

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
export type XGrammarApi = typeof xgrammar;

export interface XGrammarRuntime {
  readonly api: XGrammarApi;
  /**
   * Memories of the WebAssembly instances started while loading (may be empty). Token
   * masks are read straight from XGrammar's memory when one of these is its memory,
   * instead of one embind call per 32 tokens.
   */
  readonly memories: readonly WebAssembly.Memory[];
}

export type XGrammarLoader = () => Promise<XGrammarRuntime>;

let customLoader: XGrammarLoader | null = null;
let runtime: Promise<XGrammarRuntime> | null = null;

/** Replaces how XGrammar is started; only before its first use. */
export function setXGrammarLoader(loader: XGrammarLoader): void {
  if (runtime !== null) throw new Error('XGrammar is already started; set its loader before the first guided request');
  customLoader = loader;
}

/** Starts XGrammar on first call; every call shares the one instance. */
export function loadXGrammar(): Promise<XGrammarRuntime> {
  runtime ??= (customLoader ?? loadInNode)().catch((error: unknown) => {
    runtime = null; // a later request may try again
    throw error;
  });
  return runtime;
}

async function loadInNode(): Promise<XGrammarRuntime> {
  const { loadXGrammarInNode } = await import('./xgrammar-node-loader.js');
  return loadXGrammarInNode();
}

/**
 * The package's API object whichever way the module system delivered it: bundlers give a
 * CommonJS-style default export; Node's ESM loader runs its UMD wrapper with no `exports`,
 * which then installs it as globalThis.xgrammar.
 */
export function pickXGrammarApi(module: unknown): XGrammarApi {
  const candidates = [(module as { default?: unknown } | null)?.default, module, (globalThis as { xgrammar?: unknown }).xgrammar];
  for (const candidate of candidates) {
    if (candidate && typeof (candidate as Partial<XGrammarApi>).GrammarMatcher === 'function') return candidate as XGrammarApi;
  }
  throw new Error('@mlc-ai/web-xgrammar did not provide its API');
}
