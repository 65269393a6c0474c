/**
 * Stands in for `import … from 'onnxruntime-web/ort-wasm-simd-threaded.wasm'` in the
 * workerd tests (see the alias in vitest.config.ts). The pool's module loader ships a
 * .wasm to workerd as a JSON array of its bytes, ~15 s for ORT's 14 MB binary; here the
 * same file comes over loopback from the test server (global-setup.ts) and is compiled
 * by the unsafe-eval binding workerd grants the pool's runner (a test-only capability;
 * the pool reserves the one such binding, hence its internal name). The Worker gets
 * what the real import gives it, a precompiled WebAssembly.Module; `wrangler dev` and
 * deploys use the real import.
 */
import { env } from 'cloudflare:workers';

interface UnsafeEval {
  newWasmModule(bytes: ArrayBuffer): WebAssembly.Module;
}

const unsafeEval = env.__VITEST_POOL_WORKERS_UNSAFE_EVAL as UnsafeEval | undefined;
if (unsafeEval === undefined) {
  throw new Error('The Workers vitest pool no longer exposes its unsafe-eval binding: drop the wasm alias in vitest.config.ts.');
}
const response = await fetch(`${env.TEST_NODE_SERVER_URL as string}/__test/ort-wasm`);
if (!response.ok) throw new Error(`Cannot load ORT's wasm from the test server: HTTP ${response.status}`);

export default unsafeEval.newWasmModule(await response.arrayBuffer());
