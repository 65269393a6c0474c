import { emptyKvCache, repackKvCache, type KvCache, type KvRowSource } from './kv-cache.js';
import type { OnnxDecoder } from './onnx-decoder.js';
import type { Sequence } from './sequence.js';

/**
 * Runs the model for a set of sequences: a prefill for each new one, then one decode
 * step at a time for all of them together, in a single forward pass per step.
 *
 * Rows of different lengths share the step: each row's cache is right-aligned and its
 * padding masked (see kv-cache.ts), and position_ids carry each row's own positions, so
 * a sequence's logits are the same as if it ran alone.
 */
export class BatchRunner {
  private rows: Sequence[] = [];
  private cache: KvCache;

  constructor(private readonly decoder: OnnxDecoder) {
    this.cache = this.emptyCache(0);
  }

  get size(): number {
    return this.rows.length;
  }

  get sequences(): readonly Sequence[] {
    return this.rows;
  }

  /**
   * Runs a sequence's prompt through the model and samples its first token. Returns the
   * prompt's cache, to be merged into the batch by `admit` if the sequence goes on.
   */
  async prefill(sequence: Sequence): Promise<KvCache> {
    const prompt = sequence.promptTokenIds;
    const length = prompt.length;
    const positions = new BigInt64Array(length);
    for (let i = 0; i < length; i++) positions[i] = BigInt(i);
    const { logits, present } = await this.decoder.run({
      batch: 1,
      seqLen: length,
      inputIds: BigInt64Array.from(prompt, (id) => BigInt(id)),
      positionIds: positions,
      attentionMask: new BigInt64Array(length).fill(1n),
      past: this.emptyCache(1),
    });
    sequence.cachedLength = length;
    const vocab = this.decoder.spec.vocabSize;
    const lastRow = logits.subarray((length - 1) * vocab, length * vocab);
    const { tokenId, logprob } = sequence.sample(lastRow);
    sequence.append(tokenId, logprob);
    return present;
  }

  /**
   * Changes the batch's membership: drops finished sequences and adds newly prefilled
   * ones. Copies the cache only when membership changes.
   */
  admitAndEvict(joining: ReadonlyArray<{ sequence: Sequence; cache: KvCache }>): void {
    const staying = this.rows.filter((sequence) => !sequence.finished);
    const joiningLive = joining.filter(({ sequence }) => !sequence.finished);
    if (staying.length === this.rows.length && joiningLive.length === 0) return;

    const sources: KvRowSource[] = [];
    const rows: Sequence[] = [];
    this.rows.forEach((sequence, row) => {
      if (sequence.finished) return;
      sources.push({ cache: this.cache, row, realLength: sequence.cachedLength });
      rows.push(sequence);
    });
    for (const { sequence, cache } of joiningLive) {
      sources.push({ cache, row: 0, realLength: sequence.cachedLength });
      rows.push(sequence);
    }
    // Padding nobody needs any more is dropped here too: the new length is the longest row.
    const length = sources.reduce((max, source) => Math.max(max, source.realLength), 0);
    this.rows = rows;
    this.cache = rows.length > 0 ? repackKvCache(sources, length, this.cache) : this.emptyCache(0);
  }

  /** One decode step for every sequence in the batch: feeds each one's last token and samples the next. */
  async step(): Promise<number> {
    const batch = this.rows.length;
    if (batch === 0) return 0;
    const past = this.cache;
    const total = past.length + 1;
    const inputIds = new BigInt64Array(batch);
    const positionIds = new BigInt64Array(batch);
    const attentionMask = new BigInt64Array(batch * total);
    this.rows.forEach((sequence, row) => {
      inputIds[row] = BigInt(sequence.lastTokenId);
      positionIds[row] = BigInt(sequence.cachedLength);
      // Right-aligned: the real slots are the last cachedLength + 1 (the new one).
      attentionMask.fill(1n, row * total + (total - sequence.cachedLength - 1), (row + 1) * total);
    });
    const { logits, present } = await this.decoder.run({ batch, seqLen: 1, inputIds, positionIds, attentionMask, past });
    this.cache = present;
    const vocab = this.decoder.spec.vocabSize;
    let sampled = 0;
    this.rows.forEach((sequence, row) => {
      sequence.cachedLength += 1;
      if (sequence.finished) return;
      if (sequence.abortRequested) {
        sequence.abort();
        return;
      }
      const { tokenId, logprob } = sequence.sample(logits.subarray(row * vocab, (row + 1) * vocab));
      sequence.append(tokenId, logprob);
      sampled += 1;
    });
    return sampled;
  }

  /** Fails every sequence in the batch (the model threw) and empties it. */
  failAll(error: unknown): void {
    for (const sequence of this.rows) if (!sequence.finished) sequence.fail(error);
    this.rows = [];
    this.cache = this.emptyCache(0);
  }

  private emptyCache(batch: number): KvCache {
    const { spec } = this.decoder;
    return emptyKvCache(spec.numLayers, batch, spec.numKeyValueHeads, spec.headDim);
  }
}
