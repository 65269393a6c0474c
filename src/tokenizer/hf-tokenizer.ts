import { Tokenizer as HfTokenizersJs } from '@huggingface/tokenizers';
import type { Tokenizer } from './types.js';
import { isSplitBeforeMetaspaceExact, MetaspaceWordSplitter } from './metaspace-word-splitter.js';
import { longestPieceBound, pieceBreaksOf, type PieceBreaks } from './piece-length.js';
import { minTokenCount, tokenLowerBoundOf, type TokenLowerBound } from './token-lower-bound.js';
import type { HfTokenizerSource, TokenizerThread } from './tokenizer-thread.js';

/** A tokenizer_config.json token entry: a plain string or a serialized AddedToken. */
type ConfigToken = string | { content?: unknown } | null | undefined;

export interface HfTokenizerOptions {
  /** Overrides the EOS ids taken from tokenizer_config.json (e.g. from generation_config.json). */
  eosTokenIds?: readonly number[];
  /**
   * Keep the files it was built from until takeSource() (a home that starts a tokenizer
   * thread from them). Off by default: a big vocabulary's parsed tokenizer.json is tens of
   * MB, which a home without threads (workerd, a browser tab) would hold for nothing.
   */
  keepSource?: boolean;
}

function tokenContent(token: ConfigToken): string | undefined {
  if (typeof token === 'string') return token;
  if (token && typeof token === 'object' && typeof token.content === 'string') return token.content;
  return undefined;
}

/**
 * tokenizer_config.json key (this project's, written by the GGUF tokenizer bridge): ids that
 * decode to no text whether or not special tokens are asked for, as llama.cpp renders a
 * vocabulary's unused pieces (the `[PAD151700]` fillers of a padded vocabulary).
 */
export const UNRENDERED_TOKEN_IDS = 'unrendered_token_ids';

/** Characters tokenized per slice by encodeInSlices: a few milliseconds of BPE. */
export const ENCODE_SLICE_CHARS = 16 * 1024;

/**
 * True when a text can be tokenized in slices cut before a space that follows a
 * non-space: the normalizer is sentencepiece's (prepend "▁", spaces → "▁"), the
 * pre-tokenizer splits before every word-initial "▁" exactly (MetaspaceWordSplitter), and
 * no added token contains a space (added tokens are matched in the raw text). Each later
 * slice then drops its leading space, which the normalizer's prepend restores: the words
 * BPE sees are exactly those of the whole text.
 */
function sliceableAtSpaces(json: Record<string, unknown>): boolean {
  const normalizer = json.normalizer as { type?: unknown; normalizers?: unknown } | null | undefined;
  if (normalizer?.type !== 'Sequence' || !Array.isArray(normalizer.normalizers) || normalizer.normalizers.length !== 2) return false;
  const [first, second] = normalizer.normalizers as Array<Record<string, unknown>>;
  const prepend = first?.type === 'Prepend' && first.prepend === '\u2581';
  const pattern = second?.pattern as { String?: unknown } | undefined;
  const replace = second?.type === 'Replace' && pattern?.String === ' ' && second.content === '\u2581';
  const added = Array.isArray(json.added_tokens) ? (json.added_tokens as Array<{ content?: unknown }>) : [];
  return prepend && replace && added.every((token) => typeof token.content === 'string' && !token.content.includes(' '));
}

function asRecord(value: unknown, what: string): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new TypeError(`${what} must be a JSON object`);
  }
  return value as Record<string, unknown>;
}

/**
 * The runtime tokenizer: any Hugging Face tokenizer.json (+ tokenizer_config.json), run by
 * @huggingface/tokenizers (pure JS, so the same code works in Node, workerd and browsers).
 * Runtime-neutral: the caller reads and parses the files.
 */
export class HfTokenizer implements Tokenizer {
  readonly vocabSize: number;
  readonly bosTokenId: number | null;
  readonly eosTokenIds: readonly number[];
  readonly specialTokenIds: ReadonlySet<number>;

  /** Tokenizes text with long pieces off the event loop (set by the home: Node's engine starts a thread from takeSource()). */
  offLoop: TokenizerThread | null = null;

  private constructor(
    private readonly impl: HfTokenizersJs,
    config: Record<string, unknown>,
    options: HfTokenizerOptions,
    private source: HfTokenizerSource | null,
  ) {
    const vocab = impl.get_vocab(true);
    let maxId = -1;
    for (const id of vocab.values()) maxId = Math.max(maxId, id);
    this.vocabSize = maxId + 1;

    this.specialTokenIds = new Set(
      [...impl.get_added_tokens_decoder().values()].filter((token) => token.special).map((token) => token.id),
    );

    // What encode() really prepends (the post-processor decides), so a model without BOS
    // reports null even if its config names a bos_token.
    const prefix = impl.encode('', { add_special_tokens: true }).ids;
    this.bosTokenId = prefix.length > 0 && this.specialTokenIds.has(prefix[0]) ? prefix[0] : null;

    this.eosTokenIds = options.eosTokenIds ? [...options.eosTokenIds] : this.configEosIds(config);
    const unrendered = config[UNRENDERED_TOKEN_IDS];
    if (Array.isArray(unrendered)) this.unrenderedIds = new Set(unrendered.filter((id): id is number => Number.isInteger(id)));
  }

  /** Ids decoded as no text at all, special tokens asked for or not (UNRENDERED_TOKEN_IDS). */
  private readonly unrenderedIds: ReadonlySet<number> = new Set();

  static fromJson(tokenizerJson: unknown, tokenizerConfig: unknown, options: HfTokenizerOptions = {}): HfTokenizer {
    const json = asRecord(tokenizerJson, 'tokenizer.json');
    const config = asRecord(tokenizerConfig ?? {}, 'tokenizer_config.json');
    const impl = new HfTokenizersJs(json, config);
    const exactSplit = isSplitBeforeMetaspaceExact(json);
    if (exactSplit) impl.pre_tokenizer = new MetaspaceWordSplitter();
    const source = options.keepSource ? { tokenizerJson: json, tokenizerConfig: config, options: { eosTokenIds: options.eosTokenIds } } : null;
    const tokenizer = new HfTokenizer(impl, config, options, source);
    tokenizer.pieceBreaks = pieceBreaksOf(json, exactSplit);
    tokenizer.sliceable = exactSplit && sliceableAtSpaces(json) && tokenizer.specialTokensOnlyPrefix();
    tokenizer.lowerBound = tokenLowerBoundOf(json, exactSplit);
    return tokenizer;
  }

  /** How few tokens a text can become, from its length (set once, by fromJson; null: unknown). */
  private lowerBound: TokenLowerBound | null = null;

  minTokenCount(text: string, enough?: number, options?: { words?: boolean }): number {
    return minTokenCount(this.lowerBound, text, enough, options);
  }

  /**
   * The files this tokenizer was built from (with `keepSource`), as given, for a tokenizer
   * thread to build its copy from; once: the tokenizer stops holding them (a big
   * vocabulary's parsed JSON is tens of MB), so a second call gets null.
   */
  takeSource(): HfTokenizerSource | null {
    const source = this.source;
    this.source = null;
    return source;
  }

  /** Where the pre-tokenizer cuts a text (set once, by fromJson). */
  private pieceBreaks: PieceBreaks = 'none';

  longestPiece(text: string): number {
    return longestPieceBound(text, this.pieceBreaks);
  }

  /** Whether encodeInSlices may cut texts (set once, by fromJson). */
  private sliceable = false;

  private addedTokenTexts: string[] | null = null;

  /** An added token ends right before `space` or starts right after it. */
  private addedTokenTouches(text: string, space: number): boolean {
    this.addedTokenTexts ??= [...this.impl.get_added_tokens_decoder().values()].map((token) => token.content).filter((content) => content !== '');
    return this.addedTokenTexts.some((token) => text.endsWith(token, space) || text.startsWith(token, space + 1));
  }

  /** The post-processor only puts a prefix (BOS) in front: special tokens = prefix + plain ids. */
  private specialTokensOnlyPrefix(): boolean {
    const sample = 'a b';
    const plain = this.encode(sample, { addSpecialTokens: false });
    const special = this.encode(sample, { addSpecialTokens: true });
    const prefix = this.encode('', { addSpecialTokens: true });
    return special.length === prefix.length + plain.length && special.every((id, i) => id === (i < prefix.length ? prefix[i] : plain[i - prefix.length]));
  }

  /**
   * encode() in slices of about ENCODE_SLICE_CHARS characters, cut before a space that
   * follows a non-space (see sliceableAtSpaces): the concatenated pieces are encode()'s
   * ids. A tokenizer that cannot be cut so, or a text without such a space, is one piece.
   */
  *encodeInSlices(text: string, options: { addSpecialTokens?: boolean } = {}): Iterable<number[]> {
    const addSpecialTokens = options.addSpecialTokens ?? true;
    if (!this.sliceable || text.length <= ENCODE_SLICE_CHARS) {
      yield this.encode(text, { addSpecialTokens });
      return;
    }
    if (addSpecialTokens) yield this.encode('', { addSpecialTokens: true });
    for (const piece of this.slices(text)) yield piece === '' ? [] : this.encode(piece, { addSpecialTokens: false });
  }

  /**
   * The slices encodeInSlices cuts `text` into, in order (each encoded without special tokens;
   * encode('', special tokens) and their ids, concatenated, are encode()'s ids); null when it
   * takes the text in one piece. Read from the end, they give a text's last tokens without
   * tokenizing the rest (truncate_prompt_tokens).
   */
  sliceTexts(text: string): string[] | null {
    if (!this.sliceable || text.length <= ENCODE_SLICE_CHARS) return null;
    return [...this.slices(text)];
  }

  /** The most characters encodeInSlices hands the tokenizer in one piece (a run it cannot cut, or the whole text). */
  longestSlice(text: string): number {
    if (!this.sliceable || text.length <= ENCODE_SLICE_CHARS) return text.length;
    let longest = 0;
    for (const piece of this.slices(text)) longest = Math.max(longest, piece.length);
    return longest;
  }

  /** The pieces encodeInSlices encodes, each but the first without the space it was cut before. */
  private *slices(text: string): Iterable<string> {
    let start = 0;
    while (start < text.length) {
      let cut = text.length;
      if (text.length - start > ENCODE_SLICE_CHARS) {
        const space = /(?<=[^ ]) (?=[\s\S])/g;
        space.lastIndex = start + ENCODE_SLICE_CHARS;
        for (let found = space.exec(text); found !== null; found = space.exec(text)) {
          // Text between added tokens is normalized piece by piece (each piece gets its
          // own "▁"): a space touching an added token is no place to cut.
          if (!this.addedTokenTouches(text, found.index)) {
            cut = found.index;
            break;
          }
        }
      }
      // Every slice after the first starts at the space it was cut before, which the normalizer's prepend stands for.
      yield start === 0 ? text.slice(0, cut) : text.slice(start + 1, cut);
      start = cut;
    }
  }

  private configEosIds(config: Record<string, unknown>): number[] {
    const explicit = config.eos_token_id;
    if (typeof explicit === 'number') return [explicit];
    if (Array.isArray(explicit) && explicit.every((id) => typeof id === 'number')) return [...explicit];
    const content = tokenContent(config.eos_token as ConfigToken);
    const id = content === undefined ? undefined : this.tokenToId(content);
    return id === undefined ? [] : [id];
  }

  encode(text: string, options: { addSpecialTokens?: boolean } = {}): number[] {
    return this.impl.encode(text, { add_special_tokens: options.addSpecialTokens ?? true }).ids;
  }

  decode(ids: readonly number[], options: { skipSpecialTokens?: boolean } = {}): string {
    // @huggingface/tokenizers rejects an empty list; an empty list is simply no text.
    const shown = this.unrenderedIds.size === 0 ? [...ids] : ids.filter((id) => !this.unrenderedIds.has(id));
    if (shown.length === 0) return '';
    return this.impl.decode(shown, { skip_special_tokens: options.skipSpecialTokens ?? true });
  }

  idToToken(id: number): string | undefined {
    return this.impl.id_to_token(id);
  }

  tokenToId(token: string): number | undefined {
    return this.impl.token_to_id(token);
  }
}
