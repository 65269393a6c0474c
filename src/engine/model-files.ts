/**
 * The files of a model in the Hugging Face ONNX layout (Optimum / transformers.js /
 * onnx-community exports), already read by a runtime entry: Node reads them from disk,
 * a Worker imports them as modules, a page fetches them. The engine never touches a
 * file system.
 */
export interface ModelFiles {
  /** config.json */
  config: Record<string, unknown>;
  /** generation_config.json (optional in real exports). */
  generationConfig?: Record<string, unknown>;
  /** tokenizer.json */
  tokenizerJson: Record<string, unknown>;
  /** tokenizer_config.json (carries the chat template). */
  tokenizerConfig: Record<string, unknown>;
  /** onnx/model.onnx */
  onnx: Uint8Array;
}

/** Paths of those files inside a model directory, relative to it. */
export const MODEL_FILE_PATHS = {
  config: 'config.json',
  generationConfig: 'generation_config.json',
  tokenizerJson: 'tokenizer.json',
  tokenizerConfig: 'tokenizer_config.json',
  onnx: 'onnx/model.onnx',
} as const;
