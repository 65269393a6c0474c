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
 */
export class OnnxDecoder {
  private readonly hasPositionIds: boolean;
  private readonly hasCacheBranchFlag: boolean;

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
  }

  static async create(
    ort: OrtRuntime,
    model: Uint8Array,
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
    if (this.hasCacheBranchFlag) feeds.use_cache_branch = new ort.Tensor('bool', new Uint8Array([past.length > 0 ? 1 : 0]), [1]);
    const pastDims = [batch, past.heads, past.length, past.headDim];
    for (let layer = 0; layer < spec.numLayers; layer++) {
      feeds[`past_key_values.${layer}.key`] = new ort.Tensor('float32', past.keys[layer], pastDims);
      feeds[`past_key_values.${layer}.value`] = new ort.Tensor('float32', past.values[layer], pastDims);
    }
    const outputs = await this.session.run(feeds);
    const keys: Float32Array[] = [];
    const values: Float32Array[] = [];
    for (let layer = 0; layer < spec.numLayers; layer++) {
      keys.push(outputs[`present.${layer}.key`].data as Float32Array);
      values.push(outputs[`present.${layer}.value`].data as Float32Array);
    }
    return {
      logits: outputs.logits.data as Float32Array,
      present: { batch, length: total, heads: past.heads, headDim: past.headDim, keys, values },
    };
  }

  async dispose(): Promise<void> {
    await this.session.release();
  }
}
