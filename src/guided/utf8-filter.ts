import type { TokenVocabulary } from './token-vocabulary.js';
import { UTF8_BOUNDARY, UTF8_INVALID, utf8StepAll } from './utf8.js';

/**
 * Keeps token masks to tokens that continue the output as valid UTF-8. XGrammar matches
 * non-ASCII characters leniently at the byte level, so byte-fallback tokens could spell
 * overlong forms, surrogates or stray continuation bytes; the guide ANDs its mask with
 * this filter's verdict for the current UTF-8 state.
 */
export class Utf8MaskFilter {
  /** Tokens that are whole characters on their own: fine at a boundary, never mid-character. */
  private readonly wholeChars: Int32Array;
  /** Tokens whose validity depends on the state (byte tokens, partial characters). */
  private readonly stateDependent: number[] = [];
  private readonly stateDependentMask: Int32Array;

  constructor(private readonly vocabulary: TokenVocabulary) {
    const words = Math.ceil(vocabulary.size / 32);
    this.wholeChars = new Int32Array(words);
    this.stateDependentMask = new Int32Array(words);
    vocabulary.bytes.forEach((bytes, id) => {
      if (bytes.length === 0) return; // special tokens: the grammar decides
      if (utf8StepAll(UTF8_BOUNDARY, bytes) === UTF8_BOUNDARY) {
        this.wholeChars[id >>> 5] |= 1 << (id & 31);
      } else {
        this.stateDependent.push(id);
        this.stateDependentMask[id >>> 5] |= 1 << (id & 31);
      }
    });
  }

  /** The UTF-8 state after `tokenId` (UTF8_INVALID if it breaks the encoding). */
  advance(state: number, tokenId: number): number {
    return utf8StepAll(state, this.vocabulary.bytes[tokenId]);
  }

  /** Clears, in place, every allowed token that would make the output invalid UTF-8 from `state`. */
  apply(mask: Int32Array, state: number): void {
    if (state !== UTF8_BOUNDARY) {
      for (let w = 0; w < mask.length; w++) mask[w] &= this.stateDependentMask[w];
    }
    const { bytes } = this.vocabulary;
    for (const id of this.stateDependent) {
      const word = id >>> 5;
      const bit = 1 << (id & 31);
      if ((mask[word] & bit) !== 0 && utf8StepAll(state, bytes[id]) === UTF8_INVALID) mask[word] &= ~bit;
    }
  }
}
