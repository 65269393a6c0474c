import { yieldToEventLoop } from '../threads/yield.js';
import { HttpError } from './errors.js';
import { ENCODE_SLICE_CHARS } from '../tokenizer/hf-tokenizer.js';
import { OFF_LOOP_RUN_CHARS } from '../tokenizer/tokenizer-thread.js';
import type { TokenizerThread, TokenizerThreadJob } from '../tokenizer/tokenizer-thread.js';
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
   * to cut it) may have, judged from its length alone before tokenizing (a bound on the work).
   */
  lengthCeiling?: number;
  /**
   * Only the last this many ids are wanted (truncate_prompt_tokens): a text the tokenizer cuts
   * into slices is tokenized from its end, slice by slice, until there are enough, so the work
   * follows keepLast, not the text's length. With stopAfter as well, it may stop once there are
   * more than stopAfter (the truncated prompt will be refused as too long either way).
   */
  keepLast?: number;
  /** Refuses a text whose length alone shows more tokens than stopAfter (or lengthCeiling). */
  refuseAtLeast?: (tokenCount: number) => void;
  /**
   * Where the tokenizer has no thread: the longest piece it may take in one synchronous call
   * (maxInlinePieceChars), and the refusal of a text with a longer one, before tokenizing.
   */
  inlinePieces?: InlinePieceBound;
  /** The request's: a text on the tokenizer thread stops being tokenized when it aborts. */
  signal?: AbortSignal;
  /** Who asks (requestClient): the tokenizer thread takes waiting texts from clients in turn. */
  client?: string;
}

export interface InlinePieceBound {
  maxChars: number;
  refuse(pieceChars: number): never;
}

/** Refuses `text` where it would be tokenized here (no thread) with a piece past the bound (an upper bound on its longest piece). */
function checkInlinePieces(tokenizer: Tokenizer, text: string, bound: InlinePieceBound | undefined): void {
  if (bound === undefined || tokenizer.offLoop != null || text.length <= bound.maxChars) return;
  const longest = tokenizer.longestPiece?.(text) ?? text.length;
  if (longest > bound.maxChars) bound.refuse(longest);
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
 * With `stopAfter`, a text that surely has more tokens than that, judged from its length and
 * its words (tokenizer.minTokenCount), is handed to `refuseAtLeast` with that lower bound
 * before any tokenizing: the caller's prompt check refuses it (4 M characters of one word took
 * seconds to tokenize, only to be refused). So the work one prompt buys follows the ceiling:
 * what passes is tokenized only until past it (in slices), or, by a tokenizer that takes it
 * whole, is at most ceiling × the longest token long. Without `stopAfter`, `lengthCeiling`
 * bounds the work of a piece tokenized whole: judged from its length alone against it.
 *
 * A text the tokenizer would take in a long piece (holdsTheLoop) goes to its thread
 * (tokenizer.offLoop, Node) when it has one: the same slices and ids there, and the loop
 * free meanwhile. Without one (workerd, a browser tab) it is tokenized here as above, once
 * `inlinePieces` has refused a piece longer than it allows (BPE cannot be cut inside a
 * piece without changing the ids, nor yield within one).
 */
export async function encodePrompt(
  tokenizer: Tokenizer,
  text: string,
  options: PromptTokenOptions = {},
): Promise<number[]> {
  if (options.keepLast !== undefined) {
    const slices = tokenizer.sliceTexts?.(text) ?? null;
    if (slices !== null) return encodeTail(tokenizer, slices, options.keepLast, options);
    // One piece: tokenized whole (bounded by lengthCeiling below), then cut.
    const whole = await encodePrompt(tokenizer, text, { ...options, keepLast: undefined, stopAfter: undefined });
    return whole.slice(Math.max(0, whole.length - options.keepLast));
  }
  const ceiling = options.stopAfter ?? options.lengthCeiling;
  if (ceiling !== undefined && options.refuseAtLeast !== undefined && tokenizer.minTokenCount !== undefined) {
    // With stopAfter the text must fit: its words count too. lengthCeiling bounds the work of
    // one piece tokenized whole: its length alone.
    const atLeast = tokenizer.minTokenCount(text, ceiling, { words: options.stopAfter !== undefined });
    // lengthCeiling bounds only what would be tokenized in one synchronous piece: a long text
    // the tokenizer cuts into slices yields between them and is not refused for its length.
    const onePiece = options.stopAfter !== undefined || (tokenizer.longestSlice?.(text) ?? text.length) > MAX_SLICED_PIECE_CHARS;
    if (atLeast > ceiling && onePiece) options.refuseAtLeast(atLeast);
  }
  const thread = tokenizer.offLoop;
  if (thread != null && holdsTheLoop(tokenizer, text)) {
    return onThread(thread, { text, addSpecialTokens: options.addSpecialTokens ?? true, stopAfter: options.stopAfter }, options);
  }
  checkInlinePieces(tokenizer, text, options.inlinePieces);
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

async function onThread(thread: TokenizerThread, job: TokenizerThreadJob, { signal, client }: PromptTokenOptions): Promise<number[]> {
  try {
    return await thread.encode(job, signal, client);
  } catch (error) {
    if (signal?.aborted) throw clientClosed('its prompt was being tokenized');
    throw error;
  }
}

/**
 * The last `keepLast` ids of a text the tokenizer cuts into `slices` (encodePrompt's
 * keepLast): the slices from the last backwards, until there are enough ids (or more than
 * stopAfter), a yield between slices, each slice that would hold the loop on the thread. A
 * slice whose length alone shows more tokens than the ceiling is refused before it is
 * tokenized, as a whole text would be. Same ids as the end of encode(text).
 */
async function encodeTail(tokenizer: Tokenizer, slices: readonly string[], keepLast: number, options: PromptTokenOptions): Promise<number[]> {
  const wanted = options.stopAfter !== undefined ? Math.min(keepLast, options.stopAfter + 1) : keepLast;
  const ceiling = options.lengthCeiling ?? options.stopAfter;
  const parts: number[][] = [];
  let count = 0;
  let next = slices.length - 1;
  for (; next >= 0 && count < wanted; next--) {
    if (next < slices.length - 1) {
      await yieldToEventLoop();
      if (options.signal?.aborted) throw clientClosed('its prompt was being tokenized');
    }
    const slice = slices[next];
    if (ceiling !== undefined && options.refuseAtLeast !== undefined && tokenizer.minTokenCount !== undefined) {
      const atLeast = tokenizer.minTokenCount(slice, ceiling);
      if (atLeast > ceiling) options.refuseAtLeast(atLeast);
    }
    checkInlinePieces(tokenizer, slice, options.inlinePieces);
    const thread = tokenizer.offLoop;
    const ids =
      slice === ''
        ? []
        : thread != null && holdsTheLoop(tokenizer, slice)
          ? await onThread(thread, { text: slice, addSpecialTokens: false }, options)
          : tokenizer.encode(slice, { addSpecialTokens: false });
    parts.push(ids);
    count += ids.length;
  }
  // Every slice read: the text's first ids (BOS) belong to it too.
  if (next < 0 && (options.addSpecialTokens ?? true)) parts.push(tokenizer.encode('', { addSpecialTokens: true }));
  const ids = parts.reverse().flat();
  return ids.slice(Math.max(0, ids.length - keepLast));
}
