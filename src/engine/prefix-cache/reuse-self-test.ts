/**
 * Whether a graph continues a prompt from a kept prefix's KV as it would run the prompt
 * whole, tried at load: a probe prompt prefilled in one call, then its first part alone and
 * the rest fed on that part's cache (several new tokens on a past, as a prefix-cache hit
 * feeds them). Graphs may take the feeds and still compute positions or masks from the
 * fed length only, so the logits are compared rather than the graph read.
 */
import { emptyKvCache, releaseKvCache } from '../kv/kv-cache.js';
import { promptInput, type Decoder } from '../onnx-decoder.js';
import { relativeDifference } from '../logits-difference.js';

export interface PrefixReuseCheck {
  ok: boolean;
  /** Largest relative difference of the last position's logits, whole vs continued. */
  difference: number;
}

/** Probe ids spread over the vocabulary; the prompt is cut after PROBE_PREFIX of them. */
const PROBE_LENGTH = 9;
const PROBE_PREFIX = 5;

export async function checkPrefixReuse(decoder: Decoder, tolerance: number): Promise<PrefixReuseCheck> {
  const { spec, contract } = decoder;
  const vocab = spec.vocabSize;
  const prompt = Array.from({ length: PROBE_LENGTH }, (_, i) => (i * 7919 + 101) % vocab);
  const empty = () => emptyKvCache(spec.numLayers, 1, spec.numKeyValueHeads, spec.headDim, contract.kvType);
  try {
    const whole = await decoder.run({ ...promptInput(prompt, empty()), logitsToKeep: 1 });
    releaseKvCache(whole.present);
    const head = await decoder.run({ ...promptInput(prompt.slice(0, PROBE_PREFIX), empty()), logitsToKeep: 1 });
    const rest = prompt.slice(PROBE_PREFIX);
    const continued = await decoder.run({
      batch: 1,
      seqLen: rest.length,
      inputIds: BigInt64Array.from(rest, (id) => BigInt(id)),
      positionIds: BigInt64Array.from(rest, (_, i) => BigInt(PROBE_PREFIX + i)),
      attentionMask: new BigInt64Array(prompt.length).fill(1n),
      past: head.present,
      logitsToKeep: 1,
    });
    releaseKvCache(head.present);
    releaseKvCache(continued.present);
    const difference = relativeDifference(lastRow(continued.logits, vocab), lastRow(whole.logits, vocab));
    return { ok: difference <= tolerance, difference };
  } catch {
    return { ok: false, difference: Infinity };
  }
}

function lastRow(logits: Float32Array, vocab: number): Float32Array {
  return logits.subarray(logits.length - vocab);
}

