/**
 * workerd refuses to compile WebAssembly from bytes at run time (no `WebAssembly.compile`
 * or `instantiate(bytes)` on code that was not uploaded with the Worker). The binary has
 * to be uploaded as a module instead: wrangler turns `import m from './x.wasm'` into a
 * precompiled `WebAssembly.Module`. Libraries built with Emscripten (onnxruntime-web,
 * web-xgrammar) still call `WebAssembly.instantiate(bytes, imports)` themselves, so this
 * module redirects those calls: bytes that a registered matcher recognises are
 * instantiated from the matching precompiled module; everything else goes to the
 * original functions untouched.
 *
 * How to recognise the bytes is up to the caller: when a library accepts the binary as
 * an option (onnxruntime-web's `env.wasm.wasmBinary`), hand it a `wasmStandIn` and match
 * that; when it embeds its own bytes, match their length and magic (`sameWasmBinary`);
 * a matcher with a counter maps calls by order.
 */

export interface PrecompiledWasm {
  /** Shown in errors and for debugging. */
  name: string;
  /** The module wrangler compiled from the uploaded `.wasm`. */
  module: WebAssembly.Module;
  /** True for the bytes a library passes when it means this module. */
  matches(bytes: Uint8Array): boolean;
}

interface WasmApi {
  instantiate: typeof WebAssembly.instantiate;
  compile: typeof WebAssembly.compile;
}

const registered: PrecompiledWasm[] = [];
let original: WasmApi | null = null;

function asBytes(source: unknown): Uint8Array | null {
  if (source instanceof Uint8Array) return source;
  if (source instanceof ArrayBuffer) return new Uint8Array(source);
  if (ArrayBuffer.isView(source)) return new Uint8Array(source.buffer, source.byteOffset, source.byteLength);
  return null;
}

function findModule(source: unknown): WebAssembly.Module | null {
  const bytes = asBytes(source);
  if (bytes === null) return null;
  return registered.find((entry) => entry.matches(bytes))?.module ?? null;
}

function install(): WasmApi {
  const api: WasmApi = { instantiate: WebAssembly.instantiate, compile: WebAssembly.compile };
  // instantiate(bytes) resolves to {module, instance}; instantiate(module) only to the
  // instance, so the redirect rebuilds the shape the caller asked for.
  const instantiate = async (source: unknown, imports?: WebAssembly.Imports): Promise<unknown> => {
    const module = findModule(source);
    if (module === null) return api.instantiate(source as BufferSource, imports);
    const instance = await api.instantiate(module, imports);
    return { module, instance };
  };
  const compile = async (source: BufferSource): Promise<WebAssembly.Module> => findModule(source) ?? api.compile(source);
  WebAssembly.instantiate = instantiate as typeof WebAssembly.instantiate;
  WebAssembly.compile = compile;
  return api;
}

/**
 * Makes `WebAssembly.instantiate` / `compile` use `entry.module` for the bytes it
 * matches. Idempotent per entry name (a second registration replaces the first).
 * Returns a function that removes the entry, and the redirect with the last one.
 */
export function registerPrecompiledWasm(entry: PrecompiledWasm): () => void {
  const existing = registered.findIndex((e) => e.name === entry.name);
  if (existing >= 0) registered.splice(existing, 1);
  registered.push(entry);
  original ??= install();
  return () => {
    const index = registered.indexOf(entry);
    if (index >= 0) registered.splice(index, 1);
    if (registered.length === 0 && original !== null) {
      WebAssembly.instantiate = original.instantiate;
      WebAssembly.compile = original.compile;
      original = null;
    }
  };
}

/** Bytes a library is given in place of the real binary, and the matcher that knows them. */
export interface WasmStandIn {
  bytes: Uint8Array<ArrayBuffer>;
  matches(bytes: Uint8Array): boolean;
}

/**
 * Marker bytes: the wasm magic and version (so a library that sniffs the header is
 * satisfied) followed by a label no real binary of that length would carry.
 */
export function wasmStandIn(label: string): WasmStandIn {
  const header = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];
  const tag = new TextEncoder().encode(`precompiled:${label}`);
  const bytes = new Uint8Array(header.length + tag.length);
  bytes.set(header);
  bytes.set(tag, header.length);
  return { bytes, matches: (candidate) => sameBytes(candidate, bytes) };
}

/** A matcher for a library that embeds its binary: same length, same leading bytes. */
export function sameWasmBinary(byteLength: number, prefix: Uint8Array): (bytes: Uint8Array) => boolean {
  return (bytes) => bytes.byteLength === byteLength && sameBytes(bytes.subarray(0, prefix.byteLength), prefix);
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) return false;
  for (let i = 0; i < a.byteLength; i++) if (a[i] !== b[i]) return false;
  return true;
}
