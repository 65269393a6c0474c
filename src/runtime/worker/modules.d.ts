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

/**
 * Written by scripts/extract-xgrammar-wasm.ts next to dist/xgrammar.wasm (the build step
 * of wrangler.toml); declared here so type-checking does not depend on a build.
 */
declare module '*/xgrammar-wasm.json' {
  const info: { byteLength: number; prefix: string };
  export default info;
}

/** The part of workerd's built-in `cloudflare:workers` module the Worker uses (Durable Objects with RPC methods). */
declare module 'cloudflare:workers' {
  export abstract class DurableObject<Env = unknown> {
    protected readonly ctx: unknown;
    protected readonly env: Env;
    constructor(ctx: unknown, env: Env);
  }
}

/** A GGUF file bundled as bytes (the Data rule for `*.gguf` in wrangler.toml). */
declare module '*.gguf' {
  const bytes: ArrayBuffer;
  export default bytes;
}

/** Written by scripts/build-worker-gguf.ts beside the bundled dist/worker-gguf/model.gguf. */
declare module '*/worker-gguf/model.json' {
  const info: { name: string; bytes: number; modified: string };
  export default info;
}

/** Written by scripts/build-worker-embeddings.ts beside the bundled dist/worker-embeddings/model.onnx. */
declare module '*/worker-embeddings/model.json' {
  const info: { name: string; onnxFile: string; files: Record<string, unknown> };
  export default info;
}
