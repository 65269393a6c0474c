/**
 * The embedded model's small files (config, generation config, tokenizer), bundled as
 * JSON modules. Enough for an edge that delegates inference: it still tokenizes,
 * validates and applies the chat template itself.
 */
import config from '../../../models/stories260k/config.json';
import generationConfig from '../../../models/stories260k/generation_config.json';
import tokenizerConfig from '../../../models/stories260k/tokenizer_config.json';
import tokenizerJson from '../../../models/stories260k/tokenizer.json';
import type { ModelFiles } from '../../onnx/model-files.js';

/** The directory these files come from: its base name is the default served model name. */
export const EMBEDDED_MODEL_DIR = 'models/stories260k';

export function embeddedTokenizerFiles(): Omit<ModelFiles, 'onnx'> {
  return {
    config: config as Record<string, unknown>,
    generationConfig: generationConfig as Record<string, unknown>,
    tokenizerJson: tokenizerJson as Record<string, unknown>,
    tokenizerConfig: tokenizerConfig as Record<string, unknown>,
  };
}
