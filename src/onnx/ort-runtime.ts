import type { InferenceSession, Tensor, TensorConstructor } from 'onnxruntime-common';

/**
 * The part of an onnxruntime JS package the engine uses. onnxruntime-node and
 * onnxruntime-web both implement onnxruntime-common's API, so each runtime entry passes
 * the package it has and the engine stays the same everywhere.
 */
export interface OrtRuntime {
  InferenceSession: {
    create(model: Uint8Array | string, options?: InferenceSession.SessionOptions): Promise<InferenceSession>;
  };
  Tensor: TensorConstructor;
}

export type { InferenceSession, Tensor };
