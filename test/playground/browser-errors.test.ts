/**
 * The in-page engine's start-up errors, produced by onnxruntime-web itself (run here under
 * Node), come out as sentences a person can act on, with onnxruntime's words kept.
 */
import * as ortWeb from 'onnxruntime-web';
import { describe, expect, it } from 'vitest';
import { explainEngineError } from '../../src/runtime/browser/errors.js';

async function sessionError(model: Uint8Array): Promise<unknown> {
  ortWeb.env.wasm.numThreads = 1;
  try {
    await ortWeb.InferenceSession.create(model);
  } catch (error) {
    return error;
  }
  throw new Error('the session was created');
}

describe('explainEngineError', () => {
  it('says model.onnx is not a valid ONNX model when onnxruntime cannot parse it', async () => {
    const error = await sessionError(new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]));
    expect((error as Error).message).toContain('ERROR_CODE');
    const message = explainEngineError(error, 'wasm');
    expect(message).toMatch(/^model\.onnx is not a valid ONNX model/);
    expect(message).toContain("onnxruntime-web said: Can't create a session");
  });

  it('says which operator a backend lacks', () => {
    const error = new Error("Can't create a session. ERROR_CODE: 9, ERROR_MESSAGE: Could not find an implementation for RotaryEmbedding(1) node with name ''");
    expect(explainEngineError(error, 'webgpu')).toMatch(
      /^The model uses the operator RotaryEmbedding, which onnxruntime-web's WebGPU backend does not implement\./,
    );
  });

  it('explains a .wasm that is not WebAssembly, and WebGPU without an adapter', () => {
    const compile = new Error(
      "no available backend found. ERR: [wasm] RuntimeError: Aborted(CompileError: WebAssembly.instantiate(): expected magic word 00 61 73 6d, found 3c 68 74 6d @+0).",
    );
    expect(explainEngineError(compile, 'wasm')).toMatch(/^onnxruntime-web’s \.wasm file could not be compiled/);
    const adapter = new Error('no available backend found. ERR: [webgpu] Error: Failed to get GPU adapter. You may need to enable flag "--enable-unsafe-webgpu"');
    expect(explainEngineError(adapter, 'webgpu')).toMatch(/^WebGPU could not start in this browser.*Pick “In-page · WASM”/);
  });

  it('keeps download errors and unknown errors readable as they are', () => {
    expect(explainEngineError(new Error('Cannot download http://h/playground/model/onnx/model.onnx: HTTP 404 Not Found'), 'wasm')).toBe(
      'Cannot download http://h/playground/model/onnx/model.onnx: HTTP 404 Not Found',
    );
    expect(explainEngineError(new Error('something new'), 'webgpu')).toBe('onnxruntime-web’s WebGPU backend failed: something new');
  });
});
