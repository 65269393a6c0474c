import { pickXGrammarApi, type XGrammarRuntime } from './xgrammar-api.js';

type Instantiate = (...args: unknown[]) => Promise<unknown>;

/** Memories among an instance's exports or an import object (values up to two levels deep). */
function memoriesIn(value: unknown, found: WebAssembly.Memory[], depth = 0): void {
  if (value instanceof WebAssembly.Memory) {
    if (!found.includes(value)) found.push(value);
  } else if (depth < 2 && value !== null && typeof value === 'object') {
    for (const inner of Object.values(value)) memoriesIn(inner, found, depth + 1);
  }
}

/**
 * Runs `start` (which starts XGrammar) while watching WebAssembly.instantiate, and
 * returns its result with the memories of the instances created meanwhile: the bitmask
 * reader copies token masks straight out of XGrammar's memory when it knows it. Whatever
 * WebAssembly.instantiate is when this starts (a runtime's redirect to precompiled
 * modules included) keeps doing the work, and is put back afterwards.
 */
async function watchingWasmMemories<T>(start: () => Promise<T>): Promise<{ result: T; memories: WebAssembly.Memory[] }> {
  const wasm = WebAssembly as unknown as { instantiate: Instantiate };
  const instantiate = wasm.instantiate;
  const memories: WebAssembly.Memory[] = [];
  wasm.instantiate = async (...args: unknown[]) => {
    const result = await instantiate.apply(WebAssembly, args);
    memoriesIn(args[1], memories);
    const instance = (result as { instance?: WebAssembly.Instance }).instance ?? result;
    if (instance instanceof WebAssembly.Instance) memoriesIn(instance.exports, memories);
    return result;
  };
  try {
    return { result: await start(), memories };
  } finally {
    wasm.instantiate = instantiate;
  }
}

/**
 * Imports @mlc-ai/web-xgrammar and starts its WebAssembly module, learning its memory on
 * the way. Each runtime's loader calls this once it has set up what the package's
 * Emscripten glue needs there (globals, a precompiled module).
 */
export async function startXGrammar(importModule?: () => Promise<unknown>): Promise<XGrammarRuntime> {
  const { result: api, memories } = await watchingWasmMemories(async () => {
    const api = pickXGrammarApi(importModule ? await importModule() : await import('@mlc-ai/web-xgrammar'));
    // Any call starts the WebAssembly module; this one is cheap.
    const info = await api.TokenizerInfo.createTokenizerInfo([], 'raw', false);
    info.dispose();
    return api;
  });
  return { api, memories };
}
