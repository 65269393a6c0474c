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
  /** The decoder graph's bytes (onnx/model.onnx or the variant chosen, see model-variants.ts). */
  onnx: Uint8Array;
  /** Where the graph came from inside the model folder, e.g. "onnx/model_q4.onnx" (for the startup report). */
  onnxFile?: string;
  /**
   * The graph's path on a file system: onnxruntime-node creates the session from it, so the
   * graph's external data files resolve beside it (as the export laid them out).
   */
  onnxPath?: string;
  /**
   * External data files for onnxruntime-web (it has no file system): `path` is the file
   * name the graph refers to, as it sits beside the graph.
   */
  externalData?: Array<{ path: string; data: Uint8Array }>;
  /** Total bytes of the graph and its external data. */
  weightBytes?: number;
  /** transformers.js dtype of the variant, when its name tells. */
  dtype?: string | null;
  /**
   * The other graphs of a vision-language export, beside the decoder: embed_tokens (ids →
   * inputs_embeds, for a decoder that takes embeddings) and vision_encoder (pixel values →
   * image features, projector included); audio_encoder (log-mel features → audio
   * features, projector included) for an audio-language export.
   */
  companions?: Partial<Record<CompanionGraphName, CompanionGraph>>;
  /** preprocessor_config.json: the image processor's settings. */
  preprocessorConfig?: Record<string, unknown>;
  /** processor_config.json: the processor's (image_seq_len, patch_size, ...). */
  processorConfig?: Record<string, unknown>;
}

export type CompanionGraphName = 'embedTokens' | 'visionEncoder' | 'audioEncoder';

/** Base names of the companion graphs in onnx/, before the dtype suffix. */
export const COMPANION_GRAPH_BASES: Readonly<Record<CompanionGraphName, string>> = {
  embedTokens: 'embed_tokens',
  visionEncoder: 'vision_encoder',
  audioEncoder: 'audio_encoder',
};

export interface CompanionGraph {
  /** Path inside the model folder, e.g. "onnx/vision_encoder_q4.onnx". */
  file: string;
  onnx: Uint8Array;
  /** On a file system: onnxruntime-node opens it by path so its external data resolves. */
  path?: string;
}

/** Paths of those files inside a model directory, relative to it. */
export const MODEL_FILE_PATHS = {
  config: 'config.json',
  generationConfig: 'generation_config.json',
  tokenizerJson: 'tokenizer.json',
  tokenizerConfig: 'tokenizer_config.json',
  onnx: 'onnx/model.onnx',
  preprocessorConfig: 'preprocessor_config.json',
  processorConfig: 'processor_config.json',
} as const;
