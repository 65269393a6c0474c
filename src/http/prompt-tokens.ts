import { yieldToEventLoop } from '../engine/yield.js';
import { HttpError } from './errors.js';
import { ENCODE_SLICE_CHARS } from '../tokenizer/hf-tokenizer.js';
import { OFF_LOOP_RUN_CHARS } from '../tokenizer/tokenizer-thread.js';
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
  /** The request's: a text on the tokenizer thread stops being tokenized when it aborts. */
  signal?: AbortSignal;
}

/**
 * Whether tokenizing `text` here would hold the loop for long: a piece the pre-tokenizer
 * cannot cut longer than OFF_LOOP_RUN_CHARS (BPE on one long word: 10–100 µs a
 * character), or more text in one call than a slice.
 */
function holdsTheLoop(tokenizer: Tokenizer, text: string): boolean {
  if (text.length <= OFF_LOOP_RUN_CHARS) return false;
  if ((tokenizer.longestPiece?.(text) ?? text.length) > OFF_LOOP_RUN_CHARS) return true;
  return (tokenizer.longestSlice?.(text) ?? text.length) > MAX_SLICED_PIECE_CHARS;
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
 *
 * A text the tokenizer would take in a long piece (holdsTheLoop) goes to its thread
 * (tokenizer.offLoop, Node) when it has one: the same slices and ids there, and the loop
 * free meanwhile. Without one (workerd, a browser tab) it is tokenized here as above.
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
  const thread = tokenizer.offLoop;
  if (thread != null && holdsTheLoop(tokenizer, text)) {
    try {
      return await thread.encode({ text, addSpecialTokens: options.addSpecialTokens ?? true, stopAfter: options.stopAfter }, options.signal);
    } catch (error) {
      if (options.signal?.aborted) throw clientClosed('its prompt was being tokenized');
      throw error;
    }
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

/** A client gone while its request's work ran on a thread: nobody reads the answer, a 499 as for media, not a server error. */
export function clientClosed(during: string): HttpError {
  return new HttpError(499, 'ClientClosedRequest', `The client closed the request while ${during}.`);
}
