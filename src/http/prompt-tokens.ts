import { yieldToEventLoop } from '../engine/yield.js';
import { ENCODE_SLICE_CHARS } from '../tokenizer/hf-tokenizer.js';
import type { Tokenizer } from '../tokenizer/types.js';

/**
 * A piece of up to this many characters is an ordinary slice (encodeInSlices cuts at the first
 * space past ENCODE_SLICE_CHARS); a longer one is a run it cannot cut.
 */
const MAX_SLICED_PIECE_CHARS = ENCODE_SLICE_CHARS + 1024;

export interface PromptTokenOptions {
  addSpecialTokens?: boolean;
  /** Tokenizing may stop once there are more ids than this (the prompt is refused anyway). */
  stopAfter?: number;
  /**
   * Without stopAfter: the most tokens a text the tokenizer would take in one piece (no place
   * to cut it) may have, judged from its length before tokenizing.
   */
  lengthCeiling?: number;
  /** Refuses a text whose length alone shows more tokens than stopAfter (or lengthCeiling). */
  refuseAtLeast?: (tokenCount: number) => void;
}

/**
 * Tokenizes a prompt without holding the event loop for more than one slice's work:
 * between slices (tokenizers that can cut texts exactly; see encodeInSlices) running
 * streams and other requests get their turn. Same ids as tokenizer.encode; with
 * `stopAfter`, tokenizing may stop once there are more ids than that (the prompt will be
 * refused as too long either way).
 *
 * With `stopAfter`, a text that surely has more tokens than that, judged from its length
 * alone (tokenizer.minTokenCount), is handed to `refuseAtLeast` with that lower bound before
 * any tokenizing: the caller's prompt check refuses it (4 M characters of one word took
 * seconds to tokenize, only to be refused). Without `stopAfter`, `lengthCeiling` is that
 * bound: the text is judged from its length against it, then tokenized whole.
 */
export async function encodePrompt(
  tokenizer: Tokenizer,
  text: string,
  options: PromptTokenOptions = {},
): Promise<number[]> {
  const ceiling = options.stopAfter ?? options.lengthCeiling;
  if (ceiling !== undefined && options.refuseAtLeast !== undefined && tokenizer.minTokenCount !== undefined) {
    const atLeast = tokenizer.minTokenCount(text, ceiling);
    // lengthCeiling bounds only what would be tokenized in one synchronous piece: a long text
    // the tokenizer cuts into slices yields between them and is not refused for its length.
    const onePiece = options.stopAfter !== undefined || (tokenizer.longestSlice?.(text) ?? text.length) > MAX_SLICED_PIECE_CHARS;
    if (atLeast > ceiling && onePiece) options.refuseAtLeast(atLeast);
  }
  if (tokenizer.encodeInSlices === undefined) return tokenizer.encode(text, options);
  const ids: number[] = [];
  let first = true;
  for (const slice of tokenizer.encodeInSlices(text, options)) {
    if (!first) await yieldToEventLoop();
    first = false;
    for (const id of slice) ids.push(id);
    // Already past what the prompt may have: the rest cannot change the refusal.
    if (options.stopAfter !== undefined && ids.length > options.stopAfter) break;
  }
  return ids;
}
