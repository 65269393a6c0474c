import type { BatchRow, RowGroup, StepRow } from './batch-row.js';
import { emptyKvCache, repackKvCache, type KvCache, type KvRowSource } from './kv-cache.js';
import type { OnnxDecoder } from './onnx-decoder.js';

/** A row entering the batch: its KV cache is row `cacheRow` of `cache`. */
export interface JoiningRow {
  row: BatchRow;
  group: RowGroup;
  cache: KvCache;
  cacheRow: number;
}

/**
 * Runs the model for a set of rows: a prefill for each new prompt, then one decode step
 * at a time for all rows together, in a single forward pass per step. After each
 * forward, every group (a request: its n sequences, or its beams) gets all its rows'
 * logits at once and picks their next tokens; a group may fork rows (beam search), and
 * the forks join the batch with a copy of their parent's KV row at the next repack.
 *
 * Rows of different lengths share the step: each row's cache is right-aligned and its
 * padding masked (see kv-cache.ts), and position_ids carry each row's own positions, so
 * a sequence's logits are the same as if it ran alone.
 */
export class BatchRunner {
  private rows: BatchRow[] = [];
  /** The group of each row, in step with `rows`. */
  private groups: RowGroup[] = [];
  /** Rows forked during the last step, copying rows of the current cache. */
  private forks: JoiningRow[] = [];
  private cache: KvCache;

  constructor(private readonly decoder: OnnxDecoder) {
    this.cache = this.emptyCache(0);
  }

  /** Rows in the batch, those forked for the next step included. */
  get size(): number {
    return this.rows.length + this.forks.length;
  }

  /**
   * Runs a prompt through the model. Returns the logits of every prompt position
   * ([length, vocab]) and the prompt's cache, which rows continuing the prompt join the
   * batch with (as row 0).
   */
  async prefill(promptTokenIds: readonly number[]): Promise<{ logits: Float32Array; cache: KvCache }> {
    const length = promptTokenIds.length;
    const positions = new BigInt64Array(length);
    for (let i = 0; i < length; i++) positions[i] = BigInt(i);
    const { logits, present } = await this.decoder.run({
      batch: 1,
      seqLen: length,
      inputIds: BigInt64Array.from(promptTokenIds, (id) => BigInt(id)),
      positionIds: positions,
      attentionMask: new BigInt64Array(length).fill(1n),
      past: this.emptyCache(1),
    });
    return { logits, cache: present };
  }

  /**
   * Changes the batch's membership: drops finished rows, adds the last step's forks and
   * newly prefilled rows. Copies the cache only when membership changes.
   */
  admitAndEvict(joining: readonly JoiningRow[]): void {
    const forks = this.forks;
    // Runs before every step: the common case (nobody joins or leaves) must not allocate.
    if (forks.length === 0 && !joining.some(({ row }) => !row.finished) && !this.rows.some((row) => row.finished)) return;
    this.forks = [];

    const sources: KvRowSource[] = [];
    const rows: BatchRow[] = [];
    const groups: RowGroup[] = [];
    this.rows.forEach((row, index) => {
      if (row.finished) return;
      sources.push({ cache: this.cache, row: index, realLength: row.cachedLength });
      rows.push(row);
      groups.push(this.groups[index]);
    });
    for (const { row, group, cache, cacheRow } of [...forks, ...joining]) {
      if (row.finished) continue;
      sources.push({ cache, row: cacheRow, realLength: row.cachedLength });
      rows.push(row);
      groups.push(group);
    }
    // Padding nobody needs any more is dropped here too: the new length is the longest row.
    const length = sources.reduce((max, source) => Math.max(max, source.realLength), 0);
    this.rows = rows;
    this.groups = groups;
    this.cache = rows.length > 0 ? repackKvCache(sources, length, this.cache) : this.emptyCache(0);
  }

  /** One decode step for every row: feeds each one's last token, then lets each group pick its rows' next tokens. */
  async step(): Promise<number> {
    const { rows, groups } = this;
    const batch = rows.length;
    if (batch === 0) return 0;
    const past = this.cache;
    const total = past.length + 1;
    const inputIds = new BigInt64Array(batch);
    const positionIds = new BigInt64Array(batch);
    const attentionMask = new BigInt64Array(batch * total);
    for (let index = 0; index < batch; index++) {
      const row = rows[index];
      inputIds[index] = BigInt(row.lastTokenId);
      positionIds[index] = BigInt(row.cachedLength);
      // Right-aligned: the real slots are the last cachedLength + 1 (the new one).
      attentionMask.fill(1n, index * total + (total - row.cachedLength - 1), (index + 1) * total);
    }
    const { logits, present } = await this.decoder.run({ batch, seqLen: 1, inputIds, positionIds, attentionMask, past });
    this.cache = present;
    const vocab = this.decoder.spec.vocabSize;
    const byGroup = new Map<RowGroup, StepRow[]>();
    for (let index = 0; index < batch; index++) {
      const row = rows[index];
      row.cachedLength += 1;
      if (row.finished) continue;
      const stepRow: StepRow = { row, batchIndex: index, logits: logits.subarray(index * vocab, (index + 1) * vocab) };
      const list = byGroup.get(groups[index]);
      if (list === undefined) byGroup.set(groups[index], [stepRow]);
      else list.push(stepRow);
    }
    let generated = 0;
    for (const [group, stepRows] of byGroup) {
      const result = group.advance(stepRows);
      generated += result.generated;
      for (const fork of result.forks) this.forks.push({ row: fork.row, group, cache: present, cacheRow: fork.parentBatchIndex });
    }
    return generated;
  }

  /** Fails every group in the batch (the model threw) and empties it. */
  failAll(error: unknown): void {
    for (const group of new Set([...this.groups, ...this.forks.map((fork) => fork.group)])) group.fail(error);
    this.rows = [];
    this.groups = [];
    this.forks = [];
    this.cache = this.emptyCache(0);
  }

  private emptyCache(batch: number): KvCache {
    const { spec } = this.decoder;
    return emptyKvCache(spec.numLayers, batch, spec.numKeyValueHeads, spec.headDim);
  }
}
