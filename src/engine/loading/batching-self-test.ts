/**
 * Decides at load how (and whether) rows of different requests may share a model call,
 * by trying it: two prompts of different lengths are prefilled and decoded alone, then
 * decoded together in one batch with each padding side (kv/types.ts' KvPadding); a side
 * whose batched logits equal the solo ones is the one the graph wants. Attention wirings
 * differ (Concat + mask wants left padding; GroupQueryAttention with seqlens_k from the
 * mask wants right padding; positions computed from the past length inside the graph
 * want no padding at all), and a graph that takes every feed without error can still give
 * a shorter row wrong logits, so the test compares numbers rather than reading the graph.
 * It also serves as the warm-up pass before the server listens.
 */
import { emptyKvCache, markRealSlots, releaseKvCache, repackKvCache } from '../kv/kv-cache.js';
import type { KvCache, KvPadding } from '../kv/types.js';
import { promptInput, type Decoder } from '../onnx-decoder.js';
import { localInPlaceKv } from '../kv/in-place-step.js';
import { graphPrefillsTogether, lastRealLogits, rightPaddedPrompts } from '../batch-runner.js';
import { graphHasIntAttribute, graphHasOp } from '../graph-ops.js';
import { relativeDifference } from '../logits-difference.js';

export type BatchingMode =
  | { kind: 'batched'; padding: KvPadding }
  /** Each model call serves one request (its own sequences or beams, all of one length). */
  | { kind: 'one-request-per-step'; reason: string };

export interface BatchingCheck {
  mode: BatchingMode;
  /** Startup warnings (to print). */
  warnings: string[];
  /** Largest relative logit difference, batched vs alone, per padding side tried. */
  differences: Partial<Record<KvPadding, number>>;
  /**
   * Prompts may share a prefill call (BatchRunner.prefillTogether): the probes prefilled
   * together, right-padded, gave each its solo last-position logits. Tried only where the
   * runner would share prefills (graphPrefillsTogether); false otherwise.
   */
  prefillTogether: boolean;
}

export interface BatchingCheckOptions {
  /**
   * How the graph rounds activations to int8, when it does (int8ActivationsOf): then batching
   * changes outputs slightly, and rows within DYNAMIC_INT8_TOLERANCE of their solo logits stay
   * batched, with a warning. null: a float graph, batched only where exact.
   */
  int8Activations: Int8Activations | null;
  /** The crossRequestBatching setting. */
  crossRequestBatching: boolean;
}

/** Batched logits may differ from solo ones by float rounding of a different kernel blocking. */
export const EXACT_TOLERANCE = { float32: 1e-3, float16: 1e-2 } as const;
/**
 * Graphs that round activations to int8: a row moves a little when batched, not a lot. With
 * DynamicQuantizeLinear the scale is the batch's; with MatMulNBits at accuracy_level 4 each
 * row is rounded on its own, but the batched kernels' last-bit float differences (MLAS's one-row
 * and many-row kernels sum in different orders: 2.4e-7 relative, measured) flip some roundings,
 * which 30 layers grow to ~2% of the logits on the bench's 135M-shaped q4 model.
 */
export const DYNAMIC_INT8_TOLERANCE = 0.1;

export type Int8Activations = 'DynamicQuantizeLinear' | 'MatMulNBits accuracy_level 4';

/** Whether (and how) a serialized graph rounds activations to int8 before its products. */
export function int8ActivationsOf(graph: Uint8Array): Int8Activations | null {
  if (graphHasOp(graph, 'DynamicQuantizeLinear')) return 'DynamicQuantizeLinear';
  if (graphHasOp(graph, 'MatMulNBits') && graphHasIntAttribute(graph, 'accuracy_level', 4)) return 'MatMulNBits accuracy_level 4';
  return null;
}

const INT8_BATCHING_CAUSE: Record<Int8Activations, string> = {
  DynamicQuantizeLinear: 'the graph quantizes activations dynamically (DynamicQuantizeLinear): its scale is computed over the whole batch',
  'MatMulNBits accuracy_level 4':
    'the graph rounds activations to int8 (MatMulNBits accuracy_level 4): batched kernels sum in another order than one-row ones, and the rounding turns their last-bit differences into visible ones',
};

interface Probe {
  prompt: number[];
  next: number[];
}

/** Two prompts of different lengths and the tokens fed after them, ids spread over the vocabulary. */
function probes(vocabSize: number): Probe[] {
  const id = (i: number) => (i * 7919 + 13) % vocabSize;
  return [
    { prompt: [0, 1, 2, 3, 4, 5, 6].map(id), next: [7, 8, 9].map(id) },
    { prompt: [10, 11, 12].map(id), next: [13, 14, 15].map(id) },
  ];
}

export async function checkBatching(decoder: Decoder, options: BatchingCheckOptions): Promise<BatchingCheck> {
  const { spec, contract } = decoder;
  const empty = (batch: number) =>
    emptyKvCache(spec.numLayers, batch, spec.numKeyValueHeads, spec.headDim, contract.kvType);
  const vocab = spec.vocabSize;
  const runs = probes(vocab);

  // Alone: prefill, then one token per step; the logits of every decode step.
  const solo: Array<{ prefill: KvCache; logits: Float32Array[]; last: Float32Array }> = [];
  for (const { prompt, next } of runs) {
    const prefill = await decoder.run(promptInput(prompt, empty(1)));
    const last = prefill.logits.slice(prefill.logits.length - vocab);
    let past = prefill.present;
    const logits: Float32Array[] = [];
    for (let step = 0; step < next.length; step++) {
      const length = prompt.length + step;
      const out = await decoder.run({
        batch: 1,
        seqLen: 1,
        inputIds: BigInt64Array.of(BigInt(next[step])),
        positionIds: BigInt64Array.of(BigInt(length)),
        attentionMask: new BigInt64Array(length + 1).fill(1n),
        past,
      });
      logits.push(out.logits);
      if (past !== prefill.present) releaseKvCache(past);
      past = out.present;
    }
    if (past !== prefill.present) releaseKvCache(past);
    solo.push({ prefill: prefill.present, logits, last });
  }

  const differences: Partial<Record<KvPadding, number>> = {};
  // An in-place graph's cache is laid out one way only (real slots first, kv/in-place-kv.ts):
  // that is the layout tried, through the in-place step the batch runner takes.
  for (const padding of contract.kvOutputs === 'new' ? (['start'] as const) : (['end', 'start'] as const)) {
    try {
      differences[padding] = await batchedDifference(decoder, runs, solo, padding);
    } catch {
      differences[padding] = Infinity;
    }
  }
  // A GPU-resident cache holds GPU buffers until released (a no-op for JavaScript arrays).
  for (const { prefill } of solo) releaseKvCache(prefill);

  const warnings: string[] = [];
  const exact = EXACT_TOLERANCE[contract.kvType];
  const sides = (['end', 'start'] as const).filter((side) => (differences[side] ?? Infinity) <= exact);
  let mode: BatchingMode;
  if (sides.length > 0) {
    mode = { kind: 'batched', padding: sides[0] };
  } else if (options.int8Activations !== null && Math.min(differences.end ?? Infinity, differences.start ?? Infinity) <= DYNAMIC_INT8_TOLERANCE) {
    const padding = (differences.end ?? Infinity) <= (differences.start ?? Infinity) ? 'end' : 'start';
    mode = { kind: 'batched', padding };
    if (options.crossRequestBatching) {
      warnings.push(
        `${INT8_BATCHING_CAUSE[options.int8Activations]}, so a ` +
          `request's output changes slightly when it shares a step with others (up to ${formatDifference(differences[padding]!)} ` +
          'of the logits in the self-test). Set "crossRequestBatching": false for output independent of other requests.',
      );
    }
  } else {
    mode = {
      kind: 'one-request-per-step',
      reason:
        'batched rows of different lengths gave logits different from the same rows alone ' +
        `(left padding: ${formatDifference(differences.end)}, right padding: ${formatDifference(differences.start)} relative difference); ` +
        'the graph likely computes positions from the past length or attends over padding',
    };
    warnings.push(`cross-request batching is off for this graph: ${mode.reason}. Requests run one at a time (a request's own sequences still share a step).`);
  }
  if (!options.crossRequestBatching && mode.kind === 'batched') {
    mode = { kind: 'one-request-per-step', reason: 'the crossRequestBatching setting is false' };
  }
  // Probed only where it would be used: requests batched, by a runner that shares prefills.
  const prefillTogether = mode.kind === 'batched' && graphPrefillsTogether(decoder) && (await promptsPrefillTogether(decoder, runs, solo, empty));
  return { mode, warnings, differences, prefillTogether };
}

/** Whether the probes prefilled in one right-padded call get the logits each gets alone. */
async function promptsPrefillTogether(
  decoder: Decoder,
  runs: readonly Probe[],
  solo: ReadonlyArray<{ last: Float32Array }>,
  empty: (batch: number) => KvCache,
): Promise<boolean> {
  const prompts = runs.map((run) => run.prompt);
  try {
    const input = rightPaddedPrompts(prompts, empty(prompts.length));
    const { logits, present } = await decoder.run(input);
    releaseKvCache(present);
    const rows = lastRealLogits(logits, prompts, input.seqLen, decoder.spec.vocabSize);
    return rows.every((row, index) => relativeDifference(row, solo[index]!.last) <= EXACT_TOLERANCE[decoder.contract.kvType]);
  } catch {
    return false;
  }
}

function formatDifference(value: number | undefined): string {
  if (value === undefined || !Number.isFinite(value)) return 'failed';
  return value < 1e-3 ? value.toExponential(1) : `${(value * 100).toFixed(1)}%`;
}

async function batchedDifference(
  decoder: Decoder,
  runs: readonly Probe[],
  solo: ReadonlyArray<{ prefill: KvCache; logits: Float32Array[] }>,
  padding: KvPadding,
): Promise<number> {
  const { spec, contract } = decoder;
  const vocab = spec.vocabSize;
  const lengths = runs.map((run) => run.prompt.length);
  const steps = runs[0].next.length;
  const inPlace = contract.kvOutputs === 'new';
  const sources = solo.map(({ prefill }, row) => ({ cache: prefill, row: 0, realLength: lengths[row] }));
  // The in-place step the batch runner takes (in this thread, or in the model's worker).
  const inPlaceKv = decoder.inPlaceKv ?? localInPlaceKv(spec.maxPositionEmbeddings);
  let past = inPlace
    ? inPlaceKv.compact(sources, emptyKvCache(spec.numLayers, 0, spec.numKeyValueHeads, spec.headDim, contract.kvType), Math.max(...lengths) + steps)
    : repackKvCache(sources, Math.max(...lengths), solo[0].prefill, padding);
  let worst = 0;
  for (let step = 0; step < steps; step++) {
    const batch = runs.length;
    let attentionMask: BigInt64Array;
    let cacheLengths: Int32Array | undefined;
    if (inPlace) {
      ({ past, attentionMask, cacheLengths } = inPlaceKv.layout(past, Int32Array.from(lengths, (length) => length + step), 1));
    } else {
      const total = past.length + 1;
      const mask = new BigInt64Array(batch * total);
      runs.forEach((_, row) => markRealSlots(mask, row, total, lengths[row] + step + 1, padding));
      attentionMask = mask;
    }
    const out = await decoder.run({
      batch,
      seqLen: 1,
      inputIds: BigInt64Array.from(runs, (run) => BigInt(run.next[step])),
      positionIds: BigInt64Array.from(lengths, (length) => BigInt(length + step)),
      attentionMask,
      past,
      cacheLengths,
    });
    runs.forEach((_, row) => {
      const rowLogits = out.logits.subarray(row * vocab, (row + 1) * vocab);
      worst = Math.max(worst, relativeDifference(rowLogits, solo[row].logits[step]));
    });
    if (out.present !== past) releaseKvCache(past);
    past = out.present;
  }
  releaseKvCache(past);
  return worst;
}
