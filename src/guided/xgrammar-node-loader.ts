import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { pickXGrammarApi, type XGrammarRuntime } from './xgrammar-runtime.js';

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
 * Starts XGrammar under Node. Its Emscripten glue, running as an ES module here, expects
 * CommonJS's `require` and `__filename`, and binds its stdout printer to console.log when it
 * starts; for that window only, this provides the two globals, sends console.log to stderr
 * (XGrammar's messages must not mix with a server's stdout), and watches
 * WebAssembly.instantiate to learn XGrammar's memory. Everything is restored afterwards.
 */
export async function loadXGrammarInNode(): Promise<XGrammarRuntime> {
  const g = globalThis as Record<string, unknown>;
  const added: string[] = [];
  if (!('require' in g)) {
    g.require = createRequire(import.meta.url);
    added.push('require');
  }
  if (!('__filename' in g)) {
    g.__filename = fileURLToPath(import.meta.url);
    added.push('__filename');
  }
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
  const log = console.log;
  console.log = (...args: unknown[]) => console.error(...args);
  try {
    const api = pickXGrammarApi(await import('@mlc-ai/web-xgrammar'));
    // Any call starts the WebAssembly module; this one is cheap.
    const info = await api.TokenizerInfo.createTokenizerInfo([], 'raw', false);
    info.dispose();
    return { api, memories };
  } finally {
    console.log = log;
    wasm.instantiate = instantiate;
    for (const name of added) delete g[name];
  }
}
