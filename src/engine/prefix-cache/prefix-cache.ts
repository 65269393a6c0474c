/**
 * Prefix reuse across requests (vLLM's automatic prefix caching, llama.cpp's cache_prompt):
 * the KV of prompts already run is kept, and a new prompt starting with one of them is
 * prefilled from where the kept one ends, its earlier slots copied instead of recomputed.
 *
 * Why whole sequences rather than vLLM's hashed blocks: this engine's KV cache is one
 * contiguous buffer per layer and batch ([rows, heads, slots, headDim], kv/), not a paged
 * pool, so a reused prefix is always copied into the batch's layout, block by block or in
 * one span alike. A kept sequence then costs one copy to reuse (a prefix of it, any length),
 * and matching a prompt against a few hundred kept sequences is a scan of their common
 * prefix. What blocks would add is sharing memory between sequences with a common start;
 * here a sequence that extends a kept one replaces it (a chat's next turn), so the common
 * case keeps one copy.
 *
 * Reuse is token-exact, as llama.cpp's prompt cache is (vLLM's paged blocks reuse whole blocks
 * of 16 only, since a block is its unit of sharing; a kept sequence here is copied at any
 * length, so rounding down to a block would only recompute up to 15 tokens a turn: ~13% of a
 * chat turn's prefill on the bench's growing chat), from MIN_REUSE_TOKENS on, and never the
 * prompt's last token (its logits are what the prefill is for).
 *
 * Keys: a namespace (the LoRA adapter the KV was computed with) + the token ids. Prompts with
 * media parts are neither kept nor matched (their placeholder tokens stand for features the
 * ids do not identify).
 */
import { releaseKvCache, repackKvCache } from '../kv/kv-cache.js';
import type { KvCache } from '../kv/types.js';

/**
 * The shortest prefix reused (vLLM's default block size): a shorter one saves less prefill than
 * its lookup and copy cost, and a BOS alone is not worth reporting as cached.
 */
export const MIN_REUSE_TOKENS = 16;

interface Entry {
  namespace: string;
  tokens: readonly number[];
  /**
   * One row whose `tokens.length` real slots are `tokens`' KV: exactly those (a copy), or the
   * first of an in-place row's slots (adopted: the slots after them are free).
   */
  cache: KvCache;
  /** What it holds: its slots × the KV bytes of a token. */
  bytes: number;
}

export interface PrefixHit {
  /** Prompt tokens whose KV is reused (at least MIN_REUSE_TOKENS, fewer than the prompt's). */
  tokens: number;
  /** A one-row cache of those slots (and free room after them, when asked), the caller's to feed and then release. */
  past: KvCache;
}

export interface PrefixCacheStats {
  /** Prompt tokens looked up (vllm:prefix_cache_queries). */
  queries: number;
  /** Of those, tokens whose KV was reused (vllm:prefix_cache_hits). */
  hits: number;
  /** Bytes of KV kept. */
  bytes: number;
  entries: number;
}

export class PrefixCache {
  /** In least-recently-used order: the first is evicted first. */
  private readonly entries = new Map<Entry, true>();
  private bytes = 0;
  private queries = 0;
  private hits = 0;

  constructor(
    /** KV bytes one token takes (context-length.ts' kvBytesPerToken). */
    private readonly bytesPerToken: number,
    /** Bytes the kept sequences may take now: the KV budget less what the running batches hold. */
    private readonly capacity: () => number,
  ) {}

  stats(): PrefixCacheStats {
    return { queries: this.queries, hits: this.hits, bytes: this.bytes, entries: this.entries.size };
  }

  /** Tokens of `prompt` a lookup would reuse, without counting it or copying anything. */
  peek(namespace: string, prompt: readonly number[]): number {
    return this.best(namespace, prompt)?.tokens ?? 0;
  }

  /**
   * The longest kept prefix of `prompt` (not its last token), as a cache of its own: exactly
   * its slots, or with `room`, a row of that many slots holding them first (in-place graphs);
   * null when none. Counted in the stats either way.
   */
  lookup(namespace: string, prompt: readonly number[], room?: number): PrefixHit | null {
    this.queries += prompt.length;
    const best = this.best(namespace, prompt);
    if (best === null) return null;
    const { entry, tokens } = best;
    this.hits += tokens;
    if (room !== undefined && tokens === entry.tokens.length && entry.cache.batch === 1) {
      // The whole kept sequence starts this prompt (a chat's last turn and reply): the prompt,
      // kept after its prefill, would replace it anyway, so its cache is handed over as it is
      // (an in-place row with its real slots first; slots after them are free and masked).
      this.entries.delete(entry);
      this.bytes -= entry.bytes;
      return { tokens, past: entry.cache };
    }
    this.touch(entry);
    const source = { cache: entry.cache, row: 0, realLength: tokens, end: tokens };
    // With room: the kept slots first and free slots after them (an in-place cache's row), so
    // the prompt's rest is written into it and the row decodes on in it, without more copies.
    const past = room === undefined ? repackKvCache([source], tokens, entry.cache, 'end') : repackKvCache([source], Math.max(room, tokens), entry.cache, 'start');
    return { tokens, past };
  }

  /** A prompt prefilled without a lookup (with others, in one call, none of them having a kept prefix). */
  countMiss(prompt: readonly number[]): void {
    this.queries += prompt.length;
  }

  /**
   * Keeps row `row` of `cache`, whose `tokens.length` slots before slot `end` are `tokens`' KV
   * (by default its first ones; a copy is taken: the caller keeps its cache). A kept sequence this one extends is dropped; one that
   * extends this one makes it unneeded. Evicts least-recently-used sequences to fit.
   */
  insert(namespace: string, tokens: readonly number[], cache: KvCache, row: number, end = tokens.length): void {
    if (tokens.length < MIN_REUSE_TOKENS + 1) return;
    const bytes = tokens.length * this.bytesPerToken;
    // Larger than all the room there is: evicting the others would not make it fit.
    if (bytes > this.capacity()) return;
    const keeper = this.supersede(namespace, tokens);
    if (keeper !== null) {
      this.touch(keeper);
      return;
    }
    if (!this.fit(this.capacity() - bytes)) return;
    const copy = repackKvCache([{ cache, row, realLength: tokens.length, end }], tokens.length, cache, 'end');
    const entry: Entry = { namespace, tokens: [...tokens], cache: copy, bytes };
    this.entries.set(entry, true);
    this.bytes += bytes;
  }

  /**
   * Keeps `cache` itself (no copy) as the KV of `tokens`: a one-row in-place cache whose first
   * `tokens.length` slots are theirs (a batch whose last row ended). True when kept: the cache
   * is this cache's from then on (released when evicted); false: the caller's still.
   */
  adopt(namespace: string, tokens: readonly number[], cache: KvCache): boolean {
    if (tokens.length < MIN_REUSE_TOKENS + 1 || cache.batch !== 1 || cache.length < tokens.length) return false;
    // Buffers with room for more rows than one (a batch that shrank in place) would hold more than counted.
    if (cache.keys.length > 0 && cache.keys[0].length > cache.heads * cache.length * cache.headDim) return false;
    const bytes = cache.length * this.bytesPerToken;
    if (bytes > this.capacity()) return false;
    if (this.supersede(namespace, tokens) !== null) return false;
    if (!this.fit(this.capacity() - bytes)) return false;
    this.entries.set({ namespace, tokens: [...tokens], cache, bytes }, true);
    this.bytes += bytes;
    return true;
  }

  /** Evicts least-recently-used sequences until at most `bytes` are kept; false when `bytes` < 0. */
  fit(bytes: number): boolean {
    for (const entry of this.entries.keys()) {
      if (this.bytes <= bytes) break;
      this.remove(entry);
    }
    return bytes >= 0 && this.bytes <= bytes;
  }

  /** Drops everything kept (the model's worker went away, the engine stops). */
  clear(): void {
    for (const entry of [...this.entries.keys()]) this.remove(entry);
  }

  /**
   * Before `tokens` are kept: the kept sequence that already holds them (this one or a longer
   * one: nothing to add), or null once the kept sequences they extend are dropped (the new
   * one makes them unneeded).
   */
  private supersede(namespace: string, tokens: readonly number[]): Entry | null {
    for (const entry of this.entries.keys()) {
      if (entry.namespace !== namespace) continue;
      const common = commonPrefix(entry.tokens, tokens);
      if (common === tokens.length) return entry;
      if (common === entry.tokens.length) this.remove(entry);
    }
    return null;
  }

  private best(namespace: string, prompt: readonly number[]): { entry: Entry; tokens: number } | null {
    // The prompt's last token is always run: its logits pick the first output token.
    const usable = prompt.length - 1;
    let best: { entry: Entry; tokens: number } | null = null;
    for (const entry of this.entries.keys()) {
      if (entry.namespace !== namespace) continue;
      const tokens = Math.min(commonPrefix(entry.tokens, prompt), usable);
      if (tokens >= MIN_REUSE_TOKENS && tokens > (best?.tokens ?? 0)) best = { entry, tokens };
    }
    return best;
  }

  private touch(entry: Entry): void {
    this.entries.delete(entry);
    this.entries.set(entry, true);
  }

  private remove(entry: Entry): void {
    if (!this.entries.delete(entry)) return;
    this.bytes -= entry.bytes;
    releaseKvCache(entry.cache);
  }
}

function commonPrefix(a: readonly number[], b: readonly number[]): number {
  const length = Math.min(a.length, b.length);
  let index = 0;
  while (index < length && a[index] === b[index]) index++;
  return index;
}
