import { Tokenizer as HfTokenizersJs } from '@huggingface/tokenizers';
import type { Tokenizer } from './types.js';
import { isSplitBeforeMetaspaceExact, MetaspaceWordSplitter } from './metaspace-word-splitter.js';

/** A tokenizer_config.json token entry: a plain string or a serialized AddedToken. */
type ConfigToken = string | { content?: unknown } | null | undefined;

export interface HfTokenizerOptions {
  /** Overrides the EOS ids taken from tokenizer_config.json (e.g. from generation_config.json). */
  eosTokenIds?: readonly number[];
}

function tokenContent(token: ConfigToken): string | undefined {
  if (typeof token === 'string') return token;
  if (token && typeof token === 'object' && typeof token.content === 'string') return token.content;
  return undefined;
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

  private constructor(
    private readonly impl: HfTokenizersJs,
    config: Record<string, unknown>,
    options: HfTokenizerOptions,
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
  }

  static fromJson(tokenizerJson: unknown, tokenizerConfig: unknown, options: HfTokenizerOptions = {}): HfTokenizer {
    const json = asRecord(tokenizerJson, 'tokenizer.json');
    const config = asRecord(tokenizerConfig ?? {}, 'tokenizer_config.json');
    const impl = new HfTokenizersJs(json, config);
    if (isSplitBeforeMetaspaceExact(json)) impl.pre_tokenizer = new MetaspaceWordSplitter();
    return new HfTokenizer(impl, config, options);
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
    if (ids.length === 0) return '';
    return this.impl.decode([...ids], { skip_special_tokens: options.skipSpecialTokens ?? true });
  }

  idToToken(id: number): string | undefined {
    return this.impl.id_to_token(id);
  }

  tokenToId(token: string): number | undefined {
    return this.impl.token_to_id(token);
  }
}
