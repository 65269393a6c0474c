/**
 * The I/O contract of a decoder graph, read from the session at load instead of assumed:
 * which inputs it takes, their element types, the KV cache's and logits' float type and
 * the cache's shape. Exports differ in all of these (float16 KV and logits in fp16 / q4f16
 * exports, int32 ids, no position_ids, num_logits_to_keep, Optimum's use_cache_branch).
 * Whatever the engine cannot feed is refused here, at startup, with the input's name.
 */
import type { InferenceSession } from '../../onnx/ort-runtime.js';
import type { KvElementType } from '../kv/types.js';
import type { ModelSpec } from '../../onnx/model-spec.js';
export type IdElementType = 'int64' | 'int32';

/** The one output of an in-place graph that packs every layer's new keys and values. */
export const PACKED_NEW_KV_OUTPUT = 'new_key_values';

export interface DecoderContract {
  /**
   * "ids": the graph embeds input_ids itself. "embeds": it takes inputs_embeds (the
   * decoders of vision-language exports), which the engine computes with the model's
   * embed_tokens graph and, in a multimodal prompt, overwrites at the placeholder tokens.
   */
  input: 'ids' | 'embeds';
  /** Element type of inputs_embeds ("embeds" graphs). */
  embedsType: KvElementType;
  /** Last dim of inputs_embeds, when the graph fixes it. */
  embedsSize: number | null;
  idsType: IdElementType;
  attentionMaskType: IdElementType;
  /** null: the graph computes positions itself (from the mask or the past length). */
  positionIdsType: IdElementType | null;
  kvType: KvElementType;
  logitsType: KvElementType;
  /** The input asking for logits of the last N positions only, when the graph has one. */
  logitsToKeepInput: 'num_logits_to_keep' | 'logits_to_keep' | null;
  logitsToKeepType: IdElementType;
  /** Optimum's merged decoders switch between their no-cache and cache branches with this flag. */
  useCacheBranch: boolean;
  /**
   * "present": the Hugging Face contract, present.N.* = past + the fed tokens' slots (a new
   * cache per step). "new": the converter's `inplace` graphs output only the fed tokens'
   * slots, which the engine writes into the cache it keeps; the cache may hold free slots,
   * masked by attention_mask (kv/in-place-kv.ts).
   */
  kvOutputs: 'present' | 'new';
  /**
   * "new" graphs only: true when every layer's new slots come as one output,
   * new_key_values [2 * layers * batch, kv_heads, S, head_dim] (layer i's keys are block 2i,
   * its values block 2i + 1: the converter's `inplace` flavour today); false when they come
   * as new_key_values.N.key / .value (the flavour's first form, still served).
   */
  newKvPacked: boolean;
  /** Every input name, for the startup report. */
  inputNames: readonly string[];
}

type ValueMetadata = InferenceSession.ValueMetadata;

const ID_TYPES: readonly string[] = ['int64', 'int32'];
const FLOAT_TYPES: readonly string[] = ['float32', 'float16'];

function metadataByName(list: readonly ValueMetadata[] | undefined): Map<string, ValueMetadata> {
  return new Map((list ?? []).map((entry) => [entry.name, entry]));
}

function elementType(entry: ValueMetadata | undefined): string | undefined {
  return entry !== undefined && entry.isTensor ? entry.type : undefined;
}

/** Reads and checks the contract; throws a startup error naming what is unsupported. */
export function readDecoderContract(session: InferenceSession, spec: ModelSpec, graphLabel: string): DecoderContract {
  const inputs = metadataByName(session.inputMetadata);
  const outputs = metadataByName(session.outputMetadata);
  const inputNames = session.inputNames;
  const outputNames = session.outputNames;
  const fail = (message: string): never => {
    throw new Error(`${graphLabel} cannot be served: ${message}`);
  };

  const input = inputNames.includes('input_ids') ? 'ids' : inputNames.includes('inputs_embeds') ? 'embeds' : null;
  if (input === null) fail(`it has neither an "input_ids" nor an "inputs_embeds" input (inputs: ${inputNames.join(', ')}).`);
  for (const name of ['attention_mask', 'past_key_values.0.key']) {
    if (!inputNames.includes(name)) {
      fail(`it has no "${name}" input, so it is not a decoder exported with past_key_values (inputs: ${inputNames.join(', ')}).`);
    }
  }
  const newKvPacked = !outputNames.includes('present.0.key') && outputNames.includes(PACKED_NEW_KV_OUTPUT);
  const kvOutputs = newKvPacked || (!outputNames.includes('present.0.key') && outputNames.includes('new_key_values.0.key')) ? 'new' : 'present';
  // The output holding a layer's keys or values (a packed graph's one output holds them all).
  const kvOutputName = (layer: number, kind: string) =>
    newKvPacked ? PACKED_NEW_KV_OUTPUT : kvOutputs === 'new' ? `new_key_values.${layer}.${kind}` : `present.${layer}.${kind}`;
  if (!outputNames.includes('logits') || !outputNames.includes(kvOutputName(0, 'key'))) {
    fail(`it must output "logits" and "present.N.key/value" (outputs: ${outputNames.join(', ')}).`);
  }

  // A graph with both takes input_ids; its inputs_embeds is then left out only if optional,
  // which ONNX cannot say, so such a graph is refused below like any other unknown input.
  const known = new Set([input === 'ids' ? 'input_ids' : 'inputs_embeds', 'attention_mask', 'position_ids', 'num_logits_to_keep', 'logits_to_keep', 'use_cache_branch']);
  for (let layer = 0; layer < spec.numLayers; layer++) {
    for (const kind of ['key', 'value']) {
      const past = `past_key_values.${layer}.${kind}`;
      known.add(past);
      if (!inputNames.includes(past)) fail(`it has no "${past}" input, but config.json declares ${spec.numLayers} layers.`);
      if (!outputNames.includes(kvOutputName(layer, kind))) fail(`it has no "${kvOutputName(layer, kind)}" output.`);
    }
  }
  const unknown = inputNames.filter((name) => !known.has(name));
  if (unknown.length > 0) {
    fail(
      `it requires input${unknown.length > 1 ? 's' : ''} ${unknown.map((name) => `"${name}"`).join(', ')}, which the engine does not know how to feed ` +
        `(it feeds input_ids or inputs_embeds, attention_mask, position_ids, past_key_values.N.key/value, num_logits_to_keep / logits_to_keep, use_cache_branch).`,
    );
  }

  const idType = (name: string): IdElementType => {
    const type = elementType(inputs.get(name)) ?? 'int64';
    if (!ID_TYPES.includes(type)) fail(`its "${name}" input is ${type}; the engine feeds int64 or int32.`);
    return type as IdElementType;
  };
  const floatType = (entry: ValueMetadata | undefined, what: string): KvElementType => {
    const type = elementType(entry) ?? 'float32';
    if (!FLOAT_TYPES.includes(type)) fail(`its ${what} is ${type}; the engine handles float32 and float16.`);
    return type as KvElementType;
  };

  const kvType = floatType(inputs.get('past_key_values.0.key'), 'KV cache ("past_key_values.0.key")');
  for (let layer = 0; layer < spec.numLayers; layer++) {
    for (const name of [`past_key_values.${layer}.key`, `past_key_values.${layer}.value`, kvOutputName(layer, 'key'), kvOutputName(layer, 'value')]) {
      const entry = inputs.get(name) ?? outputs.get(name);
      if (floatType(entry, `"${name}"`) !== kvType) fail(`"${name}" is ${elementType(entry)} while "past_key_values.0.key" is ${kvType}.`);
    }
  }
  checkKvShape(inputs.get('past_key_values.0.key'), spec, fail);
  if (newKvPacked) checkKvShape(outputs.get(PACKED_NEW_KV_OUTPUT), spec, fail);

  const logitsToKeepInput = inputNames.includes('num_logits_to_keep')
    ? 'num_logits_to_keep'
    : inputNames.includes('logits_to_keep')
      ? 'logits_to_keep'
      : null;
  const embedsEntry = inputs.get('inputs_embeds');
  const embedsSize = embedsEntry !== undefined && embedsEntry.isTensor ? embedsEntry.shape.at(-1) : undefined;
  return {
    input: input!,
    embedsType: input === 'embeds' ? floatType(embedsEntry, '"inputs_embeds" input') : 'float32',
    embedsSize: typeof embedsSize === 'number' ? embedsSize : null,
    idsType: input === 'ids' ? idType('input_ids') : 'int64',
    attentionMaskType: idType('attention_mask'),
    positionIdsType: inputNames.includes('position_ids') ? idType('position_ids') : null,
    kvType,
    logitsType: floatType(outputs.get('logits'), 'logits output'),
    logitsToKeepInput,
    logitsToKeepType: logitsToKeepInput === null ? 'int64' : idType(logitsToKeepInput),
    useCacheBranch: inputNames.includes('use_cache_branch'),
    kvOutputs,
    newKvPacked,
    inputNames,
  };
}

/** The cache's fixed dims ([batch, kv_heads, past, head_dim]) must be what config.json says. */
function checkKvShape(entry: ValueMetadata | undefined, spec: ModelSpec, fail: (message: string) => never): void {
  if (entry === undefined || !entry.isTensor) return;
  const [, heads, , headDim] = entry.shape;
  if (typeof heads === 'number' && heads !== spec.numKeyValueHeads) {
    fail(`its KV cache has ${heads} heads, but config.json gives ${spec.numKeyValueHeads} key/value heads (num_key_value_heads).`);
  }
  if (typeof headDim === 'number' && headDim !== spec.headDim) {
    fail(`its KV cache has head size ${headDim}, but config.json gives ${spec.headDim} (head_dim, or hidden_size / num_attention_heads).`);
  }
}

/** One-line description of the contract for the startup report. */
export function describeContract(contract: DecoderContract): string {
  const parts = [
    contract.input === 'ids' ? `ids ${contract.idsType}` : `inputs_embeds ${contract.embedsType} (embed_tokens graph)`,
    `KV ${contract.kvType}`,
    `logits ${contract.logitsType}`,
    contract.positionIdsType === null ? 'no position_ids' : 'position_ids',
  ];
  if (contract.logitsToKeepInput) parts.push(contract.logitsToKeepInput);
  if (contract.useCacheBranch) parts.push('use_cache_branch');
  if (contract.kvOutputs === 'new') parts.push(contract.newKvPacked ? 'in-place KV (new_key_values)' : 'in-place KV (new_key_values.N.*)');
  return parts.join(', ');
}
