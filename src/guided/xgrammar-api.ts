import type xgrammar from '@mlc-ai/web-xgrammar';

/*
 * What every XGrammar module shares: the package's API, a started instance, a loader's
 * shape. The one-instance lifecycle (xgrammar-runtime.ts), the start itself
 * (xgrammar-start.ts) and Node's loader (xgrammar-node-loader.ts) build on this file and
 * on nothing above them, so the three do not import each other in a circle.
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

/**
 * Starts XGrammar. `instance` counts the starts after a trap (0 the first time): a loader
 * that can create a fresh WebAssembly instance (Node: a new module instance) uses it; one
 * that cannot returns the same API again, and XGrammar then stays reported broken.
 */
export type XGrammarLoader = (instance: number) => Promise<XGrammarRuntime>;

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
