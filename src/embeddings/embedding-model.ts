/**
 * An embedding model's ONNX graph as Optimum / onnx-community export it for
 * feature-extraction: inputs input_ids, attention_mask and, when the graph has them,
 * token_type_ids, position_ids and past_key_values.N.key/value (a decoder exported with its
 * cache: fed empty); output last_hidden_state [batch, seq, hidden]. Several inputs run in one
 * call, right-padded; each row is pooled over its own tokens.
 */
import { float32Of } from '../onnx/float16.js';
import type { InferenceSession, OrtRuntime, Tensor } from '../onnx/ort-runtime.js';
import { poolRow } from './pooling.js';
import type { PoolingMode } from './pooling-config.js';

/** Output names an export's hidden states go by (Optimum: last_hidden_state; sentence-transformers' ONNX: token_embeddings). */
const HIDDEN_OUTPUTS = ['last_hidden_state', 'token_embeddings'];

export class EmbeddingGraphError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EmbeddingGraphError';
  }
}

export interface EmbeddingGraphShape {
  /** The id used for padding rows (config pad_token_id; 0 without one). */
  padTokenId: number;
  /** A decoder's cache shape, for graphs exported with past_key_values inputs. */
  kvHeads?: number;
  headDim?: number;
}

export class EmbeddingModel {
  private readonly hiddenOutput: string;
  private readonly pastInputs: string[];
  private readonly wantsTokenTypes: boolean;
  private readonly wantsPositions: boolean;

  private constructor(
    private readonly ort: OrtRuntime,
    private readonly session: InferenceSession,
    private readonly shape: EmbeddingGraphShape,
  ) {
    const outputs = session.outputNames;
    const hidden = HIDDEN_OUTPUTS.find((name) => outputs.includes(name));
    if (hidden === undefined) {
      throw new EmbeddingGraphError(
        `the graph has no last_hidden_state output (its outputs: ${outputs.slice(0, 6).join(', ')}${outputs.length > 6 ? ', ...' : ''}): ` +
          'a text-generation export cannot be pooled; export the model for feature-extraction (Optimum: --task feature-extraction).',
      );
    }
    this.hiddenOutput = hidden;
    const inputs = session.inputNames;
    for (const required of ['input_ids', 'attention_mask']) {
      if (!inputs.includes(required)) throw new EmbeddingGraphError(`the graph has no ${required} input (its inputs: ${inputs.join(', ')}).`);
    }
    this.pastInputs = inputs.filter((name) => name.startsWith('past_key_values.'));
    if (this.pastInputs.length > 0 && (shape.kvHeads === undefined || shape.headDim === undefined)) {
      throw new EmbeddingGraphError('the graph takes past_key_values but config.json gives no num_key_value_heads / head_dim to shape them.');
    }
    const known = new Set(['input_ids', 'attention_mask', 'token_type_ids', 'position_ids', ...this.pastInputs]);
    const unknown = inputs.filter((name) => !known.has(name));
    if (unknown.length > 0) throw new EmbeddingGraphError(`the graph takes inputs the engine does not feed: ${unknown.join(', ')}.`);
    this.wantsTokenTypes = inputs.includes('token_type_ids');
    this.wantsPositions = inputs.includes('position_ids');
  }

  static async create(ort: OrtRuntime, model: Uint8Array | string, shape: EmbeddingGraphShape, options?: InferenceSession.SessionOptions): Promise<EmbeddingModel> {
    const session = await ort.InferenceSession.create(model, options);
    try {
      return new EmbeddingModel(ort, session, shape);
    } catch (error) {
      await session.release().catch(() => {});
      throw error;
    }
  }

  /** Runs `rows` (token ids, each non-empty) in one model call and pools each row. */
  async embed(rows: readonly (readonly number[])[], mode: PoolingMode): Promise<Float32Array[]> {
    const batch = rows.length;
    const seqLen = Math.max(...rows.map((row) => row.length));
    const ids = new BigInt64Array(batch * seqLen).fill(BigInt(this.shape.padTokenId));
    const mask = new BigInt64Array(batch * seqLen);
    const positions = this.wantsPositions ? new BigInt64Array(batch * seqLen) : null;
    rows.forEach((row, r) => {
      for (let i = 0; i < row.length; i += 1) {
        ids[r * seqLen + i] = BigInt(row[i]!);
        mask[r * seqLen + i] = 1n;
        if (positions) positions[r * seqLen + i] = BigInt(i);
      }
    });
    const dims = [batch, seqLen];
    const feeds: Record<string, Tensor> = {
      input_ids: new this.ort.Tensor('int64', ids, dims),
      attention_mask: new this.ort.Tensor('int64', mask, dims),
    };
    if (this.wantsTokenTypes) feeds.token_type_ids = new this.ort.Tensor('int64', new BigInt64Array(batch * seqLen), dims);
    if (positions) feeds.position_ids = new this.ort.Tensor('int64', positions, dims);
    for (const name of this.pastInputs) {
      feeds[name] = new this.ort.Tensor('float32', new Float32Array(0), [batch, this.shape.kvHeads!, 0, this.shape.headDim!]);
    }
    const results = await this.session.run(feeds, [this.hiddenOutput]);
    const hidden = results[this.hiddenOutput]!;
    try {
      const width = hidden.dims[2]!;
      const data = float32Of(hidden.data as Float32Array);
      return rows.map((row, r) => poolRow(data, r, seqLen, width, row.length, mode));
    } finally {
      for (const tensor of Object.values(results)) tensor.dispose?.();
    }
  }

  async dispose(): Promise<void> {
    await this.session.release();
  }
}
