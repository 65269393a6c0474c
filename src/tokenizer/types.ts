import type { TokenizerThread } from './tokenizer-thread.js';

/** The tokenizer contract the engine, the protocol layer and the detokenizer rely on. */
export interface Tokenizer {
  readonly vocabSize: number;
  /** Prepended by encode() when addSpecialTokens is true and the model uses one. */
  readonly bosTokenId: number | null;
  /** Every id that ends generation by default (config eos_token_id may be a list). */
  readonly eosTokenIds: readonly number[];
  /** Ids of added/special tokens (BOS, EOS, UNK, pad, ...): removed by skipSpecialTokens. */
  readonly specialTokenIds: ReadonlySet<number>;
  encode(text: string, options?: { addSpecialTokens?: boolean }): number[];
  /**
   * The same ids as encode(), in pieces of at most a few milliseconds' work each, so a
   * caller can let other work run between them (a 4 MB prompt takes seconds). Left out
   * by tokenizers that cannot cut a text without changing its tokens.
   */
  encodeInSlices?(text: string, options?: { addSpecialTokens?: boolean }): Iterable<number[]>;
  /**
   * The slices encodeInSlices cuts `text` into, in order, each to encode without special
   * tokens after encode('', { addSpecialTokens }); null when it takes the text in one piece.
   */
  sliceTexts?(text: string): string[] | null;
  /** The most characters encodeInSlices encodes in one piece (synchronously) for `text`. */
  longestSlice?(text: string): number;
  /**
   * A lower bound on encode(text).length (special tokens aside) from the text's length alone,
   * without tokenizing (see token-lower-bound.ts); 0 when the tokenizer knows none. With
   * `words`, also from its words where each is surely a token of its own (a bound on the
   * tokens, no longer on the work of tokenizing it as one piece).
   */
  minTokenCount?(text: string, enough?: number, options?: { words?: boolean }): number;
  /**
   * An upper bound on the longest piece (UTF-16 units) the pre-tokenizer hands the model in
   * one call for `text`, from the text alone (see piece-length.ts): BPE on one long piece is
   * what takes seconds.
   */
  longestPiece?(text: string): number;
  /**
   * Where text with long pieces is tokenized off the event loop (Node: a thread with a copy
   * of this tokenizer; see tokenizer-thread.ts), with the same ids; absent or null: nowhere.
   */
  offLoop?: TokenizerThread | null;
  decode(ids: readonly number[], options?: { skipSpecialTokens?: boolean }): string;
  idToToken(id: number): string | undefined;
  tokenToId(token: string): number | undefined;
}
