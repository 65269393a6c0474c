import type { Tokenizer } from './types.js';

/** Prompt tokens kept as decoding context, as vLLM does: enough for the leading-space rule. */
const PROMPT_CONTEXT_TOKENS = 5;
const REPLACEMENT_CHARACTER = '\uFFFD';
/** Emitted ids are dropped in batches so memory stays bounded without shifting every step. */
const COMPACT_AFTER_TOKENS = 1024;

export interface IncrementalDetokenizerOptions {
  skipSpecialTokens: boolean;
  /** The prompt the output continues; its last tokens give the first output token context. */
  promptTokenIds?: readonly number[];
}

/**
 * Turns generated token ids into text as they arrive, emitting only text that is final.
 *
 * Each step decodes a small window (the tokens already emitted since the last checkpoint,
 * plus the new ones) twice, with and without the pending tokens, and emits the difference.
 * Decoding a window instead of single tokens keeps sentencepiece's rule that only the very
 * first token of a text loses its leading space, and a window that still ends in U+FFFD is an
 * unfinished UTF-8 byte sequence, so it is held back until the next token completes it.
 *
 * The emitted text is the text the output adds after the prompt: decode(prompt + output)
 * minus decode(prompt), or decode(output) when there is no prompt.
 */
export class IncrementalDetokenizer {
  private readonly ids: number[];
  /** Start of the decoding window. */
  private prefixOffset: number;
  /** Tokens before this index have been emitted. */
  private readOffset: number;
  private emitted = '';

  constructor(
    private readonly tokenizer: Pick<Tokenizer, 'decode'>,
    private readonly options: IncrementalDetokenizerOptions,
  ) {
    this.ids = [...(options.promptTokenIds ?? [])];
    this.readOffset = this.ids.length;
    this.prefixOffset = Math.max(0, this.ids.length - PROMPT_CONTEXT_TOKENS);
  }

  /** All text emitted so far. */
  get text(): string {
    return this.emitted;
  }

  push(tokenId: number): string {
    this.ids.push(tokenId);
    return this.advance(false);
  }

  /** Emits whatever is still held back (e.g. a byte sequence the model never completed). */
  flush(): string {
    return this.advance(true);
  }

  private advance(final: boolean): string {
    if (this.readOffset === this.ids.length) return '';
    const skipSpecialTokens = this.options.skipSpecialTokens;
    const settled = this.tokenizer.decode(this.ids.slice(this.prefixOffset, this.readOffset), { skipSpecialTokens });
    const withPending = this.tokenizer.decode(this.ids.slice(this.prefixOffset), { skipSpecialTokens });
    const grew = withPending.length > settled.length;
    if (!final && (!grew || withPending.endsWith(REPLACEMENT_CHARACTER))) return '';
    const piece = grew ? withPending.slice(settled.length) : '';
    this.prefixOffset = this.readOffset;
    this.readOffset = this.ids.length;
    if (this.prefixOffset >= COMPACT_AFTER_TOKENS) this.compact();
    this.emitted += piece;
    return piece;
  }

  private compact(): void {
    this.ids.splice(0, this.prefixOffset);
    this.readOffset -= this.prefixOffset;
    this.prefixOffset = 0;
  }
}
