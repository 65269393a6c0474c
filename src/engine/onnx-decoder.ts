import type { InferenceSession, OrtRuntime, Tensor } from '../onnx/ort-runtime.js';
import type { GpuKvStore } from './kv/gpu-kv-cache.js';
import { PACKED_NEW_KV_OUTPUT, readDecoderContract, type DecoderContract } from './loading/decoder-contract.js';
import { EngineRequestError } from './errors.js';
import { float16Bits, float32Of, float32ToFloat16 } from '../onnx/float16.js';
import type { KvArray, KvCache } from './kv/types.js';
import { appendNewSlots, writeNewSlots } from './kv/in-place-kv.js';
import type { InPlaceKvOps } from './kv/in-place-step.js';
import type { ModelSpec } from '../onnx/model-spec.js';
import type { TokenEmbedder } from './token-embedder.js';
import type { PlaceholderEmbeds } from '../onnx/placeholder-embeds.js';
import { LORA_INPUTS } from '../adapters/lora-graph.js';
import type { LoraSlots } from '../adapters/lora-slots.js';

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
  /**
   * Logits wanted for the last this-many positions of each row (default: all `seqLen`).
   * Only graphs with a num_logits_to_keep / logits_to_keep input compute fewer; the
   * others return every position.
   */
  logitsToKeep?: number;
  /** Only for a batch of one ("embeds" graphs): features spliced in at placeholder tokens. */
  placeholders?: readonly PlaceholderEmbeds[];
  /**
   * Each row's LoRA slot (-1: the base model), when the decoder has a LoRA graph: the step
   * runs on it when any row has an adapter, on the plain graph otherwise.
   */
  loraSlots?: ArrayLike<number>;
  /**
   * In-place graphs (contract.kvOutputs "new") only: each row's real slots in `past` (its
   * first ones); the fed tokens' keys and values are written right after them, into `past`
   * itself, which is then the output's `present`. Without it, `present` is a new cache of
   * past.length + seqLen slots, as from a Hugging Face graph.
   */
  cacheLengths?: ArrayLike<number>;
}

/** One prompt fed from scratch (row 0 of a batch of one): every position attended, numbered from 0. */
export function promptInput(promptTokenIds: readonly number[], past: KvCache): DecoderInput {
  const length = promptTokenIds.length;
  return {
    batch: 1,
    seqLen: length,
    inputIds: BigInt64Array.from(promptTokenIds, (id) => BigInt(id)),
    positionIds: BigInt64Array.from({ length }, (_, i) => BigInt(i)),
    attentionMask: new BigInt64Array(length).fill(1n),
    past,
  };
}

export interface DecoderOutput {
  /** [batch, seqLen (or logitsToKeep), vocab], float32 whatever the graph outputs. */
  logits: Float32Array;
  /**
   * past + the new slots: [batch, heads, past.length + seqLen, headDim] per layer, or, for an
   * in-place step (DecoderInput.cacheLengths), `past` itself with the new slots written in.
   */
  present: KvCache;
  /** The call's own time (ms), where it differs from what the caller sees (the model worker: calls queue there). */
  computeMs?: number;
}

/**
 * What the batch runner, the batching self-test and the LoRA setup need of a decoder:
 * OnnxDecoder runs the session in this thread; model-thread/worker-decoder.ts runs the
 * same OnnxDecoder in a worker thread, which then owns the KV cache (caches on this side
 * are handles, see model-thread/remote-kv.ts).
 */
export interface Decoder {
  readonly spec: ModelSpec;
  readonly contract: DecoderContract;
  readonly hasLora: boolean;
  /** The size of inputs_embeds the embed_tokens graph gives ("embeds" graphs; null before its first call or for "ids" graphs). */
  readonly embeddingSize: number | null;
  run(input: DecoderInput): Promise<DecoderOutput>;
  /** Why the decoder cannot run any more (its worker thread died), or null. */
  brokenReason?(): string | null;
  /** Where the decoder keeps an in-place cache elsewhere (its worker thread), the operations on it; absent: this thread's arrays. */
  readonly inPlaceKv?: InPlaceKvOps;
  attachLora(model: Uint8Array, slots: LoraSlots, options?: InferenceSession.SessionOptions): Promise<void>;
  dispose(): Promise<void>;
}

/**
 * A decoder-only model exported with the Optimum / transformers.js contract: inputs
 * input_ids, attention_mask, past_key_values.N.key/value and, when the graph has them,
 * position_ids, num_logits_to_keep / logits_to_keep and use_cache_branch; outputs logits,
 * present.N.key/value. Element types come from the graph (decoder-contract.ts): ids int64
 * or int32, KV cache and logits float32 or float16 (logits are handed on as float32).
 *
 * A decode step of a small model costs little more than the runtime's fixed overhead, so
 * `run` does as little as it can around session.run: names are built once, a step's
 * present tensors go back in as the next step's past unchanged, and empty pasts and the
 * cache-branch flags are created once.
 */
export class OnnxDecoder implements Decoder {
  private readonly pastKeyNames: string[];
  private readonly pastValueNames: string[];
  private readonly presentKeyNames: string[];
  private readonly presentValueNames: string[];
  /** In-place graphs with one output per layer and kind: new_key_values.N.*, the fed tokens' slots only. */
  private readonly newKeyNames: string[];
  private readonly newValueNames: string[];
  private readonly cacheBranch: { on: Tensor; off: Tensor };
  private readonly emptyPastByBatch = new Map<number, Tensor>();
  /** The same decoder with multi-LoRA inputs (adapters/lora-graph.ts), when adapters are on. */
  private lora: { session: InferenceSession; slots: LoraSlots; a: Tensor; b: Tensor } | null = null;

  private constructor(
    private readonly ort: OrtRuntime,
    private readonly session: InferenceSession,
    readonly spec: ModelSpec,
    readonly contract: DecoderContract,
    private readonly embedder: TokenEmbedder | null,
    /** WebGPU: keeps present.* on the GPU as the next step's past (see kv/gpu-kv-cache.ts). */
    private readonly gpuKv?: GpuKvStore,
  ) {
    const layers = Array.from({ length: spec.numLayers }, (_, layer) => layer);
    this.pastKeyNames = layers.map((layer) => `past_key_values.${layer}.key`);
    this.pastValueNames = layers.map((layer) => `past_key_values.${layer}.value`);
    this.presentKeyNames = layers.map((layer) => `present.${layer}.key`);
    this.presentValueNames = layers.map((layer) => `present.${layer}.value`);
    this.newKeyNames = layers.map((layer) => `new_key_values.${layer}.key`);
    this.newValueNames = layers.map((layer) => `new_key_values.${layer}.value`);
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
    graphLabel = 'The model graph',
    embedder: TokenEmbedder | null = null,
    gpuKv?: GpuKvStore,
  ): Promise<OnnxDecoder> {
    let session: InferenceSession;
    try {
      session = await ort.InferenceSession.create(model, gpuKv ? { ...options, preferredOutputLocation: presentOnGpu(spec.numLayers) } : options);
    } catch (error) {
      throw new Error(`${graphLabel} cannot be served: onnxruntime cannot load it: ${explainLoadError((error as Error).message)}`);
    }
    try {
      const contract = readDecoderContract(session, spec, graphLabel);
      if (contract.input === 'embeds' && embedder === null) {
        throw new Error(
          `${graphLabel} cannot be served: it takes "inputs_embeds" instead of "input_ids", and the model folder has no ` +
            `onnx/embed_tokens.onnx to compute them from the ids (vision-language exports ship one beside the decoder).`,
        );
      }
      if (contract.embedsSize !== null && embedder?.size != null && contract.embedsSize !== embedder.size) {
        throw new Error(`${graphLabel} cannot be served: it takes embeddings of size ${contract.embedsSize}, embed_tokens gives ${embedder.size}.`);
      }
      if (!(gpuKv && contract.kvOutputs === 'new')) return new OnnxDecoder(ort, session, spec, contract, contract.input === 'embeds' ? embedder : null, gpuKv);
    } catch (error) {
      await session.release();
      throw error;
    }
    // The in-place cache lives in JavaScript buffers the engine writes; it has no present.* to keep on the GPU.
    await session.release();
    return OnnxDecoder.create(ort, model, spec, options, graphLabel, embedder);
  }

  /**
   * Adds the LoRA graph: a second session on the same weights plus the adapter inputs.
   * Both sessions take and give the same KV cache, so steps may alternate between them.
   */
  async attachLora(model: Uint8Array, slots: LoraSlots, options: InferenceSession.SessionOptions = {}): Promise<void> {
    const session = await this.ort.InferenceSession.create(model, options);
    const columns = slots.tableColumns;
    this.lora = {
      session,
      slots,
      // The tensors wrap the tables, so rewriting a slot needs no new tensor.
      a: new this.ort.Tensor('float32', slots.a, [slots.layout.aRows, columns]),
      b: new this.ort.Tensor('float32', slots.b, [columns, slots.layout.bCols]),
    };
  }

  get hasLora(): boolean {
    return this.lora !== null;
  }

  get embeddingSize(): number | null {
    return this.embedder?.size ?? null;
  }

  async run(input: DecoderInput): Promise<DecoderOutput> {
    const { ort, spec, contract } = this;
    const { batch, seqLen, past } = input;
    const total = past.length + seqLen;
    const feeds: Record<string, Tensor> = {
      attention_mask: this.ids(contract.attentionMaskType, input.attentionMask, [batch, total]),
    };
    if (this.embedder === null) {
      if (input.placeholders !== undefined && input.placeholders.length > 0) {
        throw new EngineRequestError('This model takes token ids only; a prompt with media features cannot be fed to it.');
      }
      feeds.input_ids = this.ids(contract.idsType, input.inputIds, [batch, seqLen]);
    } else {
      feeds.inputs_embeds = await this.embeddings(this.embedder, input);
    }
    if (contract.positionIdsType !== null) feeds.position_ids = this.ids(contract.positionIdsType, input.positionIds, [batch, seqLen]);
    if (contract.useCacheBranch) feeds.use_cache_branch = past.length > 0 ? this.cacheBranch.on : this.cacheBranch.off;
    // A prefill without prompt logprobs needs the last position only (a long prompt's
    // logits would otherwise be prompt length × vocabulary floats); speculative steps
    // read every fed position; a decode step feeds one position per row anyway.
    if (contract.logitsToKeepInput !== null) {
      const keep = Math.min(seqLen, input.logitsToKeep ?? seqLen);
      feeds[contract.logitsToKeepInput] =
        contract.logitsToKeepType === 'int64'
          ? new ort.Tensor('int64', BigInt64Array.of(BigInt(keep)), [])
          : new ort.Tensor('int32', Int32Array.of(keep), []);
    }
    this.feedPast(feeds, past);
    let session = this.session;
    const { lora } = this;
    if (lora !== null && input.loraSlots !== undefined && Array.prototype.some.call(input.loraSlots, (slot: number) => slot >= 0)) {
      session = lora.session;
      feeds[LORA_INPUTS.a] = lora.a;
      feeds[LORA_INPUTS.b] = lora.b;
      feeds[LORA_INPUTS.mask] = new ort.Tensor('float32', lora.slots.mask(input.loraSlots), [batch, 1, lora.slots.laneColumns]);
    }
    if (input.cacheLengths !== undefined && contract.kvOutputs !== 'new') throw new Error('cacheLengths is for in-place graphs only');
    const outputs = await session.run(feeds);
    if (contract.kvOutputs === 'new') {
      const { keys: newKeys, values: newValues } = this.newSlots(outputs, batch * past.heads * seqLen * past.headDim, input.cacheLengths === undefined);
      let present: KvCache;
      if (input.cacheLengths !== undefined) {
        writeNewSlots(past, newKeys, newValues, input.cacheLengths, seqLen);
        present = past;
      } else {
        present = appendNewSlots(past, newKeys, newValues, seqLen);
      }
      return { logits: float32Of(outputs.logits.data as Float32Array | Uint16Array), present };
    }
    if (this.gpuKv) {
      const shape = { batch, length: total, heads: past.heads, headDim: past.headDim };
      const present = this.gpuKv.fromPresent(this.presentKeyNames.map((name) => outputs[name]), this.presentValueNames.map((name) => outputs[name]), shape);
      return { logits: float32Of(outputs.logits.data as Float32Array | Uint16Array), present };
    }
    const keyTensors: Tensor[] = [];
    const valueTensors: Tensor[] = [];
    const keys: KvArray[] = [];
    const values: KvArray[] = [];
    for (let layer = 0; layer < spec.numLayers; layer++) {
      const key = outputs[this.presentKeyNames[layer]];
      const value = outputs[this.presentValueNames[layer]];
      keyTensors.push(key);
      valueTensors.push(value);
      keys.push(kvArrayOf(key.data as KvArray));
      values.push(kvArrayOf(value.data as KvArray));
    }
    const presentLength = outputs[this.presentKeyNames[0]].dims[2];
    return {
      logits: float32Of(outputs.logits.data as Float32Array | Uint16Array),
      present: {
        batch,
        // GroupQueryAttention sizes present by total_sequence_length, which equals this.
        length: typeof presentLength === 'number' ? presentLength : total,
        heads: past.heads,
        headDim: past.headDim,
        keys,
        values,
        tensors: { keys: keyTensors, values: valueTensors },
      },
    };
  }

  async dispose(): Promise<void> {
    await this.lora?.session.release();
    await this.session.release();
    await this.embedder?.dispose();
  }

  /** The token embeddings of the fed ids, with placeholder tokens' rows replaced by their features. */
  private async embeddings(embedder: TokenEmbedder, input: DecoderInput): Promise<Tensor> {
    const { batch, seqLen } = input;
    const embeds = await embedder.embed(input.inputIds, [batch, seqLen]);
    const size = embeds.length / (batch * seqLen);
    for (const { tokenId, embeds: features } of input.placeholders ?? []) {
      if (batch !== 1) throw new Error('placeholder embeddings are spliced into a batch of one prompt');
      const wanted = features.length / size;
      let next = 0;
      for (let position = 0; position < seqLen; position++) {
        if (input.inputIds[position] !== BigInt(tokenId)) continue;
        if (next < wanted) embeds.set(features.subarray(next * size, (next + 1) * size), position * size);
        next += 1;
      }
      if (next !== wanted || !Number.isInteger(wanted)) {
        throw new EngineRequestError(
          `The prompt has ${next} placeholder tokens (id ${tokenId}) but its media gave features for ${wanted}: ` +
            'placeholder tokens may only come from the media parts.',
        );
      }
    }
    const dims = [batch, seqLen, size];
    return this.contract.embedsType === 'float16'
      ? new this.ort.Tensor('float16', float32ToFloat16(embeds), dims)
      : new this.ort.Tensor('float32', embeds, dims);
  }

  private ids(type: 'int64' | 'int32', data: BigInt64Array, dims: number[]): Tensor {
    if (type === 'int64') return new this.ort.Tensor('int64', data, dims);
    return new this.ort.Tensor('int32', Int32Array.from(data, (value) => Number(value)), dims);
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
    if (past.gpu) {
      for (let layer = 0; layer < numLayers; layer++) {
        feeds[this.pastKeyNames[layer]] = past.gpu.keys[layer];
        feeds[this.pastValueNames[layer]] = past.gpu.values[layer];
      }
      return;
    }
    const dims = [past.batch, past.heads, past.length, past.headDim];
    const type = this.contract.kvType;
    // An in-place cache's buffers have room for more rows: the batch is their first rows.
    const size = past.batch * past.heads * past.length * past.headDim;
    const batchRows = (data: KvArray): KvArray => (data.length === size ? data : data.subarray(0, size));
    const wrap = (tensor: Tensor | undefined, data: KvArray) =>
      // Reused only while it still wraps this very memory: a cache rebuilt from the arrays
      // (a repack, or one copied with its old tensors) is wrapped afresh.
      // (A float16 cache holds a bit view of the tensor's Float16Array where the browser has one: same memory.)
      tensor !== undefined && sameMemory(tensor.data as KvArray, data) ? tensor : new this.ort.Tensor(type, data, dims);
    const keys: Tensor[] = [];
    const values: Tensor[] = [];
    for (let layer = 0; layer < numLayers; layer++) {
      keys.push((feeds[this.pastKeyNames[layer]] = wrap(past.tensors?.keys[layer], batchRows(past.keys[layer]))));
      values.push((feeds[this.pastValueNames[layer]] = wrap(past.tensors?.values[layer], batchRows(past.values[layer]))));
    }
    // An in-place cache is fed again next step as it is: its tensors are kept with it.
    if (this.contract.kvOutputs === 'new') past.tensors = { keys, values };
  }

  /**
   * An in-place graph's new slots per layer ([batch, heads, S, headDim] each). From a packed
   * output they are views of its blocks, or copies when they become the cache itself
   * (appendNewSlots keeps an empty past's new slots as they are).
   */
  private newSlots(outputs: InferenceSession.ReturnType, layerSize: number, copy: boolean): { keys: KvArray[]; values: KvArray[] } {
    if (!this.contract.newKvPacked) {
      return {
        keys: this.newKeyNames.map((name) => kvArrayOf(outputs[name].data as KvArray)),
        values: this.newValueNames.map((name) => kvArrayOf(outputs[name].data as KvArray)),
      };
    }
    const packed = kvArrayOf(outputs[PACKED_NEW_KV_OUTPUT].data as KvArray);
    const block = (index: number) => (copy ? packed.slice(index * layerSize, (index + 1) * layerSize) : packed.subarray(index * layerSize, (index + 1) * layerSize));
    const layers = Array.from({ length: this.spec.numLayers }, (_, layer) => layer);
    return { keys: layers.map((layer) => block(2 * layer)), values: layers.map((layer) => block(2 * layer + 1)) };
  }

  private emptyPast(past: KvCache): Tensor {
    let empty = this.emptyPastByBatch.get(past.batch);
    if (!empty) {
      const data = this.contract.kvType === 'float16' ? new Uint16Array(0) : new Float32Array(0);
      empty = new this.ort.Tensor(this.contract.kvType, data, [past.batch, past.heads, 0, past.headDim]);
      this.emptyPastByBatch.set(past.batch, empty);
    }
    return empty;
  }
}

/** Session option: every present.* output written to a GPU buffer; logits still come to the CPU. */
/** float32 stays; float16 as bit patterns (kv/types.ts), also when onnxruntime gives a Float16Array. */
function kvArrayOf(data: KvArray): KvArray {
  return data instanceof Float32Array ? data : float16Bits(data);
}

function sameMemory(a: KvArray, b: KvArray): boolean {
  return a === b || (a.buffer === b.buffer && a.byteOffset === b.byteOffset && a.length === b.length);
}

function presentOnGpu(numLayers: number): Record<string, 'gpu-buffer'> {
  const locations: Record<string, 'gpu-buffer'> = {};
  for (let layer = 0; layer < numLayers; layer++) {
    locations[`present.${layer}.key`] = 'gpu-buffer';
    locations[`present.${layer}.value`] = 'gpu-buffer';
  }
  return locations;
}

/** TensorProto.DataType numbers onnxruntime's JS bindings name only by number. */
const ONNX_TYPE_NAMES: Record<string, string> = {
  '11': 'float64',
  '14': 'complex64',
  '15': 'complex128',
  '16': 'bfloat16',
  '17': 'float8e4m3fn',
  '18': 'float8e4m3fnuz',
  '19': 'float8e5m2',
  '20': 'float8e5m2fnuz',
};

function explainLoadError(message: string): string {
  const unsupported = /Unsupported data type: (\d+)/.exec(message);
  if (unsupported) {
    const name = ONNX_TYPE_NAMES[unsupported[1]] ?? `ONNX type ${unsupported[1]}`;
    return `an input or output is ${name}, which onnxruntime's JavaScript API cannot exchange (the engine handles float32 and float16 KV and logits).`;
  }
  return message;
}
