/**
 * The embedded model (models/stories260k) in full: the JSON files plus the ONNX graph,
 * bundled as a Data module (an ArrayBuffer; see the rule in wrangler.toml). To embed
 * another model, change these imports and those in worker-tokenizer-files.ts; mind the
 * platform's size limit (docs/workerd.md).
 */
import onnx from '../../../models/stories260k/onnx/model.onnx';
import type { ModelFiles } from '../../onnx/model-files.js';
import { embeddedTokenizerFiles } from './tokenizer-files.js';

export function embeddedModelFiles(): ModelFiles {
  return { ...embeddedTokenizerFiles(), onnx: new Uint8Array(onnx) };
}
