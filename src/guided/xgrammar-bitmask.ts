/**
 * Reads the token bitmask XGrammar returns as an embind std::vector<int32_t>.
 *
 * The portable way is one embind `get` per 32-token word, a few hundred nanoseconds
 * each: fine for small vocabularies, about a millisecond per step at 150k tokens. When
 * XGrammar's WebAssembly memory is known, the words are copied straight out of it
 * (libc++'s vector starts with its begin and end pointers). That path is trusted only
 * after it agreed with `get` on the first VERIFY_READS reads; any disagreement turns it
 * off for good.
 */
export interface EmbindIntVector {
  size(): number;
  get(index: number): number;
  delete(): void;
  $$?: { ptr?: number };
}

const VERIFY_READS = 16;

export class BitmaskReader {
  private memory: WebAssembly.Memory | null;
  private verifiedReads = 0;

  constructor(candidates: readonly WebAssembly.Memory[]) {
    this.memory = candidates.length === 1 ? candidates[0] : null;
  }

  /** Copies the vector into `out`, whose length must be the vector's size. */
  read(vector: EmbindIntVector, out: Int32Array): void {
    const size = vector.size();
    if (size !== out.length) throw new Error(`XGrammar returned a bitmask of ${size} words, expected ${out.length}`);
    const view = this.memory ? this.view(this.memory, vector, size) : null;
    if (view && this.verifiedReads >= VERIFY_READS) {
      out.set(view);
      return;
    }
    for (let i = 0; i < size; i++) out[i] = vector.get(i);
    if (view && view.every((word, i) => word === out[i])) this.verifiedReads++;
    else this.memory = null;
  }

  /** Whether reads now come straight from memory (for benchmarks and tests). */
  get direct(): boolean {
    return this.memory !== null && this.verifiedReads >= VERIFY_READS;
  }

  private view(memory: WebAssembly.Memory, vector: EmbindIntVector, size: number): Int32Array | null {
    const ptr = vector.$$?.ptr;
    const buffer = memory.buffer;
    if (typeof ptr !== 'number' || ptr % 4 !== 0 || ptr + 8 > buffer.byteLength) return null;
    const [begin, end] = new Uint32Array(buffer, ptr, 2);
    if (begin % 4 !== 0 || end - begin !== size * 4 || end > buffer.byteLength) return null;
    return new Int32Array(buffer, begin, size);
  }
}
