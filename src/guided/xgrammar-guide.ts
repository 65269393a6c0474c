import type { Guide } from './guide.js';
import type { Utf8MaskFilter } from './utf8-filter.js';
import { UTF8_BOUNDARY, UTF8_INVALID } from './utf8.js';
import type { BitmaskReader, EmbindIntVector } from './xgrammar-bitmask.js';
import { applyMask, firstAllowed, maskAllows } from './allowed-mask.js';

/** The embind GrammarMatcher object under @mlc-ai/web-xgrammar's wrapper (its `handle`). */
export interface MatcherHandle {
  GetNextTokenBitmask(vocabSize: number): EmbindIntVector;
  AcceptToken(tokenId: number, verbose: boolean): boolean;
  IsTerminated(): boolean;
  delete(): void;
}

/** What every guide of one tokenizer shares. */
export interface GuideContext {
  /** Logits row length; also the bitmask length in bits (rounded up to words). */
  readonly vocabSize: number;
  readonly reader: BitmaskReader;
  readonly utf8: Utf8MaskFilter;
  /** Told when XGrammar's WebAssembly traps under a guide (the instance must be replaced). */
  readonly onTrap?: (error: unknown) => void;
}

const finalizer =
  typeof FinalizationRegistry === 'undefined' ? null : new FinalizationRegistry<MatcherHandle>((handle) => handle.delete());

/**
 * A guide on an XGrammar matcher: XGrammar's mask for the grammar, ANDed with the UTF-8
 * filter. The mask is computed once per step, on first use.
 */
export class XGrammarGuide implements Guide {
  private readonly mask: Int32Array;
  private maskValid = false;
  private utf8State = UTF8_BOUNDARY;
  private terminated = false;
  private handle: MatcherHandle | null;

  constructor(
    handle: MatcherHandle,
    private readonly context: GuideContext,
  ) {
    this.handle = handle;
    this.mask = new Int32Array(Math.ceil(context.vocabSize / 32));
    // A guide dropped without dispose() still frees its WebAssembly memory eventually.
    finalizer?.register(this, handle, this);
  }

  allowedMask(): Int32Array {
    if (this.maskValid) return this.mask;
    const handle = this.live();
    if (this.terminated) this.mask.fill(0);
    else {
      const vector = this.guarded(() => handle.GetNextTokenBitmask(this.context.vocabSize));
      try {
        this.context.reader.read(vector, this.mask);
      } finally {
        vector.delete();
      }
      this.context.utf8.apply(this.mask, this.utf8State);
      // Bits past the vocabulary (padding of the last word) are never tokens.
      const tail = this.context.vocabSize & 31;
      if (tail !== 0) this.mask[this.mask.length - 1] &= (1 << tail) - 1;
    }
    this.maskValid = true;
    return this.mask;
  }

  isAllowed(tokenId: number): boolean {
    return maskAllows(this.allowedMask(), this.context.vocabSize, tokenId);
  }

  maskLogits(logits: Float32Array): void {
    applyMask(this.allowedMask(), this.context.vocabSize, logits);
  }

  firstAllowedToken(): number {
    return firstAllowed(this.allowedMask());
  }

  accept(tokenId: number): void {
    if (!this.isAllowed(tokenId)) throw new Error(`token ${tokenId} is not allowed by the guided-decoding grammar here`);
    const handle = this.live();
    if (!this.guarded(() => handle.AcceptToken(tokenId, false))) throw new Error(`the guided-decoding grammar rejected token ${tokenId}`);
    this.utf8State = this.context.utf8.advance(this.utf8State, tokenId);
    if (this.utf8State === UTF8_INVALID) throw new Error(`token ${tokenId} breaks the UTF-8 encoding of the output`);
    this.terminated = handle.IsTerminated();
    this.maskValid = false;
  }

  isTerminated(): boolean {
    return this.terminated;
  }

  dispose(): void {
    if (this.handle === null) return;
    finalizer?.unregister(this);
    this.handle.delete();
    this.handle = null;
  }

  /** Runs an XGrammar call; a trap is reported (so the instance gets replaced) and fails this guide's request. */
  private guarded<T>(call: () => T): T {
    try {
      return call();
    } catch (error) {
      if (typeof WebAssembly !== 'undefined' && error instanceof WebAssembly.RuntimeError) this.context.onTrap?.(error);
      throw error;
    }
  }

  private live(): MatcherHandle {
    if (this.handle === null) throw new Error('this guide was disposed');
    return this.handle;
  }
}
