import { convertLlama2cTokenizer } from '../../../src/convert/llama2c-tokenizer.js';
import { HfTokenizer } from '../../../src/tokenizer/hf-tokenizer.js';
import { readTok512 } from './paths.js';
import { readReferenceVocab, type ReferenceVocab } from './reference-llama2c-encoder.js';

/** tok512.bin converted by our converter, as the models/stories260k files are produced. */
export function storiesTokenizerFiles(): { tokenizerJson: object; tokenizerConfig: object } {
  return convertLlama2cTokenizer(readTok512());
}

export function storiesTokenizer(): HfTokenizer {
  const { tokenizerJson, tokenizerConfig } = storiesTokenizerFiles();
  return HfTokenizer.fromJson(tokenizerJson, tokenizerConfig);
}

export function storiesReferenceVocab(): ReferenceVocab {
  return readReferenceVocab(readTok512());
}
