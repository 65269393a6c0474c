/**
 * Module types wrangler (and the Workers vitest pool) give to non-JS imports, per the
 * rules in wrangler.toml: `.wasm` is precompiled (CompiledWasm), `.onnx` arrives as
 * bytes (Data).
 */
declare module '*.wasm' {
  const module: WebAssembly.Module;
  export default module;
}

declare module '*.onnx' {
  const bytes: ArrayBuffer;
  export default bytes;
}
