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
  decode(ids: readonly number[], options?: { skipSpecialTokens?: boolean }): string;
  idToToken(id: number): string | undefined;
  tokenToId(token: string): number | undefined;
}
