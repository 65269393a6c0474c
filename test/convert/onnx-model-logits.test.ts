/**
 * The committed ONNX model against the llama2.c reference forward pass, on onnxruntime-node
 * and onnxruntime-web (WASM): see decoder-semantics.ts for what is checked.
 */
import { readFile } from 'node:fs/promises';
import * as ortNode from 'onnxruntime-node';
import * as ortWeb from 'onnxruntime-web';
import { describe } from 'vitest';
import { decoderSemanticsTests } from './decoder-semantics.js';
import { COMMITTED_ONNX } from './model-paths.js';

ortWeb.env.wasm.numThreads = 1;

describe('committed stories260k ONNX model vs llama2.c reference on onnxruntime-node', () => {
  decoderSemanticsTests(ortNode, () => readFile(COMMITTED_ONNX));
});

describe('committed stories260k ONNX model vs llama2.c reference on onnxruntime-web (WASM)', () => {
  decoderSemanticsTests(ortWeb, () => readFile(COMMITTED_ONNX));
});
