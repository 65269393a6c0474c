/**
 * Minimal driver for the exported decoder, shared by the tests: builds the Optimum-style
 * feeds, carries present.* back in as past_key_values.* (for an `inplace` graph, past +
 * the layer's block of new_key_values), and runs greedy decoding. Works with
 * onnxruntime-node and onnxruntime-web, which expose the same API.
 */
import type * as OrtNode from 'onnxruntime-node';

export type Ort = Pick<typeof OrtNode, 'InferenceSession' | 'Tensor'>;
type Session = OrtNode.InferenceSession;
type Tensor = OrtNode.Tensor;

export const LAYERS = 5;
export const KV_HEADS = 4;
export const HEAD_DIM = 8;
export const VOCAB = 512;

export interface StepInput {
  inputIds: number[][];
  /** [batch, past + seq]; defaults to all ones. */
  attentionMask?: number[][];
  /** Defaults to past + index for every row. */
  positionIds?: number[][];
  past?: Map<string, Tensor>;
  /** num_logits_to_keep, for graphs that take it: logits of the last N positions; 0 (default): all. */
  logitsToKeep?: number;
}

export interface StepOutput {
  logits: Float32Array;
  dims: readonly number[];
  /** Ready to pass as the next step's `past`. */
  present: Map<string, Tensor>;
  outputs: Record<string, Tensor>;
}

export class DecoderHarness {
  private constructor(
    private readonly ort: Ort,
    readonly session: Session,
  ) {}

  static async create(
    ort: Ort,
    model: Uint8Array,
    options?: OrtNode.InferenceSession.SessionOptions,
  ): Promise<DecoderHarness> {
    return new DecoderHarness(ort, await ort.InferenceSession.create(model, options));
  }

  async step(input: StepInput): Promise<StepOutput> {
    const batch = input.inputIds.length;
    const seq = input.inputIds[0].length;
    const pastLen = input.past ? (input.past.get('past_key_values.0.key')!.dims[2] as number) : 0;
    const mask = input.attentionMask ?? input.inputIds.map(() => Array<number>(pastLen + seq).fill(1));
    const positions = input.positionIds ?? input.inputIds.map((row) => row.map((_, i) => pastLen + i));
    const feeds: Record<string, Tensor> = {
      input_ids: this.int64(input.inputIds),
      attention_mask: this.int64(mask),
      position_ids: this.int64(positions),
    };
    if (this.session.inputNames.includes('num_logits_to_keep')) {
      feeds.num_logits_to_keep = new this.ort.Tensor('int64', BigInt64Array.of(BigInt(input.logitsToKeep ?? 0)), []);
    }
    for (let i = 0; i < LAYERS; i++) {
      for (const kind of ['key', 'value']) {
        const name = `past_key_values.${i}.${kind}`;
        feeds[name] =
          input.past?.get(name) ?? new this.ort.Tensor('float32', new Float32Array(0), [batch, KV_HEADS, 0, HEAD_DIM]);
      }
    }
    const outputs = (await this.session.run(feeds)) as Record<string, Tensor>;
    const present = new Map<string, Tensor>();
    for (let i = 0; i < LAYERS; i++) {
      for (const [k, kind] of ['key', 'value'].entries()) {
        // An `inplace` graph outputs only the fed tokens' slots (all layers' in one packed
        // output, block 2i + k: layer i's keys, then values): the cache is past + them.
        const packed = outputs.new_key_values;
        const size = batch * KV_HEADS * seq * HEAD_DIM;
        const fresh = packed
          ? new this.ort.Tensor('float32', (packed.data as Float32Array).slice((2 * i + k) * size, (2 * i + k + 1) * size), [batch, KV_HEADS, seq, HEAD_DIM])
          : outputs[`new_key_values.${i}.${kind}`];
        const cache = fresh ? this.appendSlots(feeds[`past_key_values.${i}.${kind}`], fresh) : outputs[`present.${i}.${kind}`];
        present.set(`past_key_values.${i}.${kind}`, cache);
      }
    }
    return { logits: outputs.logits.data as Float32Array, dims: outputs.logits.dims, present, outputs };
  }

  /** Greedy decoding of one prompt with the KV cache: prefill, then one token per step. */
  async greedy(promptIds: readonly number[], steps: number): Promise<number[]> {
    let out = await this.step({ inputIds: [[...promptIds]] });
    const generated: number[] = [];
    for (let n = 0; n < steps; n++) {
      const seq = out.dims[1] as number;
      const next = argmaxRow(out.logits, seq - 1);
      generated.push(next);
      if (n + 1 < steps) out = await this.step({ inputIds: [[next]], past: out.present });
    }
    return generated;
  }

  /** [B, kv, T, d] + [B, kv, S, d] → [B, kv, T + S, d]. */
  private appendSlots(past: Tensor, fresh: Tensor): Tensor {
    const [batch, heads, pastLen, dim] = past.dims as number[];
    const seq = fresh.dims[2] as number;
    const a = past.data as Float32Array;
    const b = fresh.data as Float32Array;
    const out = new Float32Array(batch * heads * (pastLen + seq) * dim);
    for (let r = 0; r < batch * heads; r++) {
      out.set(a.subarray(r * pastLen * dim, (r + 1) * pastLen * dim), r * (pastLen + seq) * dim);
      out.set(b.subarray(r * seq * dim, (r + 1) * seq * dim), (r * (pastLen + seq) + pastLen) * dim);
    }
    return new this.ort.Tensor('float32', out, [batch, heads, pastLen + seq, dim]);
  }

  private int64(rows: number[][]): Tensor {
    const flat = BigInt64Array.from(rows.flat().map((v) => BigInt(v)));
    return new this.ort.Tensor('int64', flat, [rows.length, rows[0].length]);
  }
}

/** Logits of flat position `index` (row-major over batch and sequence). */
export function logitsAt(logits: Float32Array, index: number): Float32Array {
  return logits.subarray(index * VOCAB, (index + 1) * VOCAB);
}

export function argmaxRow(logits: Float32Array, index: number): number {
  const row = logitsAt(logits, index);
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i] > row[best]) best = i;
  return best;
}

export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`length mismatch: ${a.length} vs ${b.length}`);
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  return Number.isNaN(worst) ? Infinity : worst;
}
