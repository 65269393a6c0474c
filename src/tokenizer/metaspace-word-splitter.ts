import { PreTokenizer } from '@huggingface/tokenizers';

/**
 * Llama-style tokenizer.json files have no pre-tokenizer, so the BPE model sees the whole
 * prompt as one "word": every encode runs merges over the entire text and nothing is cached
 * (about 5 ms per KB in @huggingface/tokenizers, half a minute for a 4 MB prompt).
 *
 * If no merge joins a piece ending in a non-"▁" character with a piece starting with "▁",
 * no merge can ever cross a point where a "▁" follows a non-"▁" character. BPE on the chunks
 * between such points, concatenated, is then exactly BPE on the whole text, and the model
 * caches repeated chunks (words). sentencepiece vocabularies trained with
 * split_by_whitespace (the default, Llama 1/2, TinyStories) satisfy this.
 */

const METASPACE = '\u2581';
const BEFORE_WORD_START = /(?<=[^\u2581])(?=\u2581)/u;

interface BpeModelJson {
  type?: unknown;
  merges?: unknown;
  dropout?: unknown;
  ignore_merges?: unknown;
}

function mergeParts(merge: unknown): [string, string] | null {
  if (Array.isArray(merge) && merge.length === 2 && merge.every((part) => typeof part === 'string')) {
    return [merge[0], merge[1]];
  }
  if (typeof merge === 'string') {
    const space = merge.indexOf(' ');
    return space > 0 ? [merge.slice(0, space), merge.slice(space + 1)] : null;
  }
  return null;
}

/** True when splitting before each word-initial "▁" cannot change the BPE result. */
export function isSplitBeforeMetaspaceExact(tokenizerJson: { pre_tokenizer?: unknown; model?: unknown }): boolean {
  const model = tokenizerJson.model as BpeModelJson | undefined;
  if (tokenizerJson.pre_tokenizer != null || model?.type !== 'BPE' || !Array.isArray(model.merges)) return false;
  // Dropout makes merges random and ignore_merges looks whole words up first: both depend on
  // where words start, so the split would change results.
  if (model.dropout != null && model.dropout !== 0) return false;
  if (model.ignore_merges === true) return false;
  for (const merge of model.merges) {
    const parts = mergeParts(merge);
    if (parts === null) return false;
    const [left, right] = parts;
    if (!left.endsWith(METASPACE) && right.startsWith(METASPACE)) return false;
  }
  return true;
}

export class MetaspaceWordSplitter extends PreTokenizer {
  override pre_tokenize_text(text: string): string[] {
    return text.split(BEFORE_WORD_START);
  }
}
