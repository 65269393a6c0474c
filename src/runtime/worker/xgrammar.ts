/**
 * Starts XGrammar (structured output) inside workerd. The package embeds its
 * WebAssembly as base64 and instantiates it from bytes, which workerd forbids; the same
 * binary, extracted at build time (scripts/extract-xgrammar-wasm.ts, wrangler's [build]
 * command), is uploaded with the Worker as a precompiled module, and the package's
 * instantiate call is redirected to it (worker-wasm.ts), recognised by the length and
 * leading bytes the build step recorded.
 *
 * wrangler bundles the package as dist/web-xgrammar.js (the [alias] in wrangler.toml),
 * a copy without its Node-only branches. Where the original is loaded instead (the
 * workerd vitest pool resolves it itself), its glue reads `location.href` on import
 * (else CommonJS's `require` and `__filename`) and, taking workerd for Node, builds a
 * `require` from it: a file-URL placeholder stands in while it loads. It only locates
 * files with it, and the binary is embedded, so nothing is ever read or fetched.
 */
import xgrammarWasm from '../../../dist/xgrammar.wasm';
import wasmInfo from '../../../dist/xgrammar-wasm.json';
import type { XGrammarLoader, XGrammarRuntime } from '../../guided/xgrammar-api.js';
import { startXGrammar } from '../../guided/xgrammar-start.js';
import { registerPrecompiledWasm, sameWasmBinary } from './wasm.js';

const PLACEHOLDER_LOCATION = { href: 'file:///worker/xgrammar.js' };

function base64Bytes(text: string): Uint8Array {
  return Uint8Array.from(atob(text), (char) => char.charCodeAt(0));
}

async function loadXGrammarInWorker(): Promise<XGrammarRuntime> {
  const prefix = base64Bytes(wasmInfo.prefix);
  registerPrecompiledWasm({ name: '@mlc-ai/web-xgrammar', module: xgrammarWasm, matches: sameWasmBinary(wasmInfo.byteLength, prefix) });
  const g = globalThis as Record<string, unknown>;
  const addLocation = !('location' in g);
  if (addLocation) g.location = PLACEHOLDER_LOCATION;
  try {
    return await startXGrammar();
  } finally {
    if (addLocation) delete g.location;
  }
}

/** The loader to pass to setXGrammarLoader in a Worker. */
export const workerXGrammarLoader: XGrammarLoader = loadXGrammarInWorker;
