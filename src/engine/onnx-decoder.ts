import type { InferenceSession, OrtRuntime, Tensor } from './ort-runtime.js';
import type { KvCache } from './kv-cache.js';
import type { ModelSpec } from './model-spec.js';

/** One forward pass over a batch: `seqLen` new tokens per row after the cached ones. */
export interface DecoderInput {
  batch: number;
  seqLen: number;
  /** [batch, seqLen] */
  inputIds: BigInt64Array;
  /** [batch, seqLen] */
  positionIds: BigInt64Array;
  /** [batch, past.length + seqLen]: 1 for real slots, 0 for padding. */
  attentionMask: BigInt64Array;
  past: KvCache;
}

export interface DecoderOutput {
  /** [batch, seqLen, vocab] */
  logits: Float32Array;
  /** past + the new slots: [batch, heads, past.length + seqLen, headDim] per layer. */
  present: KvCache;
}

/**
 * A decoder-only model exported with the Optimum / transformers.js contract: inputs
 * input_ids, attention_mask, position_ids, past_key_values.N.key/value; outputs logits,
 * present.N.key/value.
 *
 * A decode step of a small model costs little more than the runtime's fixed overhead, so
 * `run` does as little as it can around session.run: names are built once, a step's
 * present tensors go back in as the next step's past unchanged, and empty pasts and the
 * cache-branch flags are created once.
 */
export class OnnxDecoder {
  private readonly hasPositionIds: boolean;
  private readonly hasCacheBranchFlag: boolean;
  private readonly pastKeyNames: string[];
  private readonly pastValueNames: string[];
  private readonly presentKeyNames: string[];
  private readonly presentValueNames: string[];
  private readonly cacheBranch: { on: Tensor; off: Tensor };
  private readonly emptyPastByBatch = new Map<number, Tensor>();

  private constructor(
    private readonly ort: OrtRuntime,
    private readonly session: InferenceSession,
    readonly spec: ModelSpec,
  ) {
    const inputs = new Set(session.inputNames);
    for (const name of ['input_ids', 'attention_mask', 'past_key_values.0.key']) {
      if (!inputs.has(name)) {
        throw new Error(`model.onnx has no "${name}" input: not a decoder exported with past_key_values (inputs: ${session.inputNames.join(', ')})`);
      }
    }
    if (!session.outputNames.includes('logits') || !session.outputNames.includes('present.0.key')) {
      throw new Error(`model.onnx must output "logits" and "present.N.key/value" (outputs: ${session.outputNames.join(', ')})`);
    }
    this.hasPositionIds = inputs.has('position_ids');
    // Optimum's merged decoders switch between their no-cache and cache branches with this flag.
    this.hasCacheBranchFlag = inputs.has('use_cache_branch');
    const layers = Array.from({ length: spec.numLayers }, (_, layer) => layer);
    this.pastKeyNames = layers.map((layer) => `past_key_values.${layer}.key`);
    this.pastValueNames = layers.map((layer) => `past_key_values.${layer}.value`);
    this.presentKeyNames = layers.map((layer) => `present.${layer}.key`);
    this.presentValueNames = layers.map((layer) => `present.${layer}.value`);
    this.cacheBranch = {
      on: new ort.Tensor('bool', Uint8Array.of(1), [1]),
      off: new ort.Tensor('bool', Uint8Array.of(0), [1]),
    };
  }

  static async create(
    ort: OrtRuntime,
    model: Uint8Array | string,
    spec: ModelSpec,
    options: InferenceSession.SessionOptions = {},
  ): Promise<OnnxDecoder> {
    const session = await ort.InferenceSession.create(model, options);
    return new OnnxDecoder(ort, session, spec);
  }

  async run(input: DecoderInput): Promise<DecoderOutput> {
    const { ort, spec } = this;
    const { batch, seqLen, past } = input;
    const total = past.length + seqLen;
    const feeds: Record<string, Tensor> = {
      input_ids: new ort.Tensor('int64', input.inputIds, [batch, seqLen]),
      attention_mask: new ort.Tensor('int64', input.attentionMask, [batch, total]),
    };
    if (this.hasPositionIds) feeds.position_ids = new ort.Tensor('int64', input.positionIds, [batch, seqLen]);
    if (this.hasCacheBranchFlag) feeds.use_cache_branch = past.length > 0 ? this.cacheBranch.on : this.cacheBranch.off;
    this.feedPast(feeds, past);
    const outputs = await this.session.run(feeds);
    const keyTensors: Tensor[] = [];
    const valueTensors: Tensor[] = [];
    const keys: Float32Array[] = [];
    const values: Float32Array[] = [];
    for (let layer = 0; layer < spec.numLayers; layer++) {
      const key = outputs[this.presentKeyNames[layer]];
      const value = outputs[this.presentValueNames[layer]];
      keyTensors.push(key);
      valueTensors.push(value);
      keys.push(key.data as Float32Array);
      values.push(value.data as Float32Array);
    }
    return {
      logits: outputs.logits.data as Float32Array,
      present: {
        batch,
        length: total,
        heads: past.heads,
        headDim: past.headDim,
        keys,
        values,
        tensors: { keys: keyTensors, values: valueTensors },
      },
    };
  }

  async dispose(): Promise<void> {
    await this.session.release();
  }

  private feedPast(feeds: Record<string, Tensor>, past: KvCache): void {
    const { numLayers } = this.spec;
    if (past.length === 0) {
      // Every layer's empty past is the same zero-size tensor.
      const empty = this.emptyPast(past);
      for (let layer = 0; layer < numLayers; layer++) {
        feeds[this.pastKeyNames[layer]] = empty;
        feeds[this.pastValueNames[layer]] = empty;
      }
      return;
    }
    const dims = [past.batch, past.heads, past.length, past.headDim];
    const wrap = (tensor: Tensor | undefined, data: Float32Array) =>
      // Reused only while it still wraps this very array: a cache rebuilt from the arrays
      // (a repack, or one copied with its old tensors) is wrapped afresh.
      tensor !== undefined && tensor.data === data ? tensor : new this.ort.Tensor('float32', data, dims);
    for (let layer = 0; layer < numLayers; layer++) {
      feeds[this.pastKeyNames[layer]] = wrap(past.tensors?.keys[layer], past.keys[layer]);
      feeds[this.pastValueNames[layer]] = wrap(past.tensors?.values[layer], past.values[layer]);
    }
  }

  private emptyPast(past: KvCache): Tensor {
    let empty = this.emptyPastByBatch.get(past.batch);
    if (!empty) {
      empty = new this.ort.Tensor('float32', new Float32Array(0), [past.batch, past.heads, 0, past.headDim]);
      this.emptyPastByBatch.set(past.batch, empty);
    }
    return empty;
  }
}
