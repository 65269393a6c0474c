import { afterEach, describe, expect, it } from 'vitest';
import { registerPrecompiledWasm, sameWasmBinary, wasmStandIn } from '../../src/runtime/worker/wasm.js';
// A hand-assembled module exporting add(i32, i32) -> i32; arrives precompiled (CompiledWasm).
import addModule from './fixtures/add.wasm';

/** The same module's bytes, as a library that embeds its binary would pass them. */
const ADD_WASM_BYTES = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x07, 0x01, 0x60, 0x02, 0x7f, 0x7f, 0x01, 0x7f, 0x03, 0x02,
  0x01, 0x00, 0x07, 0x07, 0x01, 0x03, 0x61, 0x64, 0x64, 0x00, 0x00, 0x0a, 0x09, 0x01, 0x07, 0x00, 0x20, 0x00, 0x20,
  0x01, 0x6a, 0x0b,
]);

type AddExports = { add(a: number, b: number): number };

describe('WebAssembly redirect in workerd', () => {
  const cleanups: Array<() => void> = [];
  afterEach(() => {
    while (cleanups.length > 0) cleanups.pop()!();
  });

  it('is needed: workerd refuses to compile WebAssembly from bytes', async () => {
    await expect(WebAssembly.instantiate(ADD_WASM_BYTES)).rejects.toThrow();
  });

  it('instantiates the precompiled module for a stand-in, with the {module, instance} shape of instantiate(bytes)', async () => {
    const standIn = wasmStandIn('add');
    cleanups.push(registerPrecompiledWasm({ name: 'add', module: addModule, matches: standIn.matches }));
    const result = (await WebAssembly.instantiate(standIn.bytes, {})) as unknown as WebAssembly.WebAssemblyInstantiatedSource;
    expect(result.module).toBe(addModule);
    expect((result.instance.exports as unknown as AddExports).add(2, 40)).toBe(42);
    // An ArrayBuffer holding the same bytes is recognised too (Emscripten passes either).
    const fromBuffer = (await WebAssembly.instantiate(standIn.bytes.slice().buffer, {})) as unknown as WebAssembly.WebAssemblyInstantiatedSource;
    expect(fromBuffer.module).toBe(addModule);
    expect(await WebAssembly.compile(standIn.bytes)).toBe(addModule);
  });

  it('recognises a library\'s embedded binary by length and header', async () => {
    cleanups.push(
      registerPrecompiledWasm({ name: 'add', module: addModule, matches: sameWasmBinary(ADD_WASM_BYTES.length, ADD_WASM_BYTES.subarray(0, 16)) }),
    );
    const { instance } = (await WebAssembly.instantiate(ADD_WASM_BYTES, {})) as unknown as WebAssembly.WebAssemblyInstantiatedSource;
    expect((instance.exports as unknown as AddExports).add(-1, 1)).toBe(0);
  });

  it('leaves other bytes and already compiled modules to the original functions, and uninstalls cleanly', async () => {
    const original = WebAssembly.instantiate;
    const remove = registerPrecompiledWasm({ name: 'add', module: addModule, matches: wasmStandIn('add').matches });
    expect(WebAssembly.instantiate).not.toBe(original);
    await expect(WebAssembly.instantiate(wasmStandIn('other').bytes)).rejects.toThrow();
    const instance = await WebAssembly.instantiate(addModule, {});
    expect((instance.exports as unknown as AddExports).add(1, 2)).toBe(3);
    remove();
    expect(WebAssembly.instantiate).toBe(original);
  });
});
