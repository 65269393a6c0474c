/**
 * The context the engine serves and how many sequences run together, from the model's
 * context, the server's maxSeqLen and a KV-cache memory budget.
 *
 * vLLM takes max_model_len from the model's config unless --max-model-len lowers it, and
 * refuses to start when one sequence of that length does not fit its KV cache. Here the
 * cache is one buffer per layer of [rows, heads, slots, head_dim] whose slots are the
 * longest row's (in-place-kv.ts): one long sequence makes every row that long. So the
 * budget bounds both one full-context sequence and the rows of a batch of them.
 */
import { rowRoom, slotRoom } from './kv/in-place-kv.js';

export interface ContextSettings {
  /** The model's context (config files: max_position_embeddings, model_max_length). */
  modelContext: number;
  /** The server's maxSeqLen; null: the model's context. */
  maxSeqLen: number | null;
  /** KV bytes one token takes over all layers (keys and values). */
  bytesPerToken: number;
  kvCacheMemoryBytes: number;
  maxRunningSequences: number;
}

export interface ContextPlan {
  /** The longest sequence (prompt + output) served. */
  contextLength: number;
  /** Sequences run together: maxRunningSequences, or fewer when their KV cache would not fit. */
  maxRunningSequences: number;
  /** Startup report lines. */
  notes: string[];
}

/** Slot blocks of in-place-kv.ts: a lowered context is a whole number of them. */
const SLOT_BLOCK = 64;

export function formatBytes(bytes: number): string {
  if (bytes >= 1024 ** 3) return `${(bytes / 1024 ** 3).toFixed(2)} GiB`;
  if (bytes >= 1024 ** 2) return `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
  return `${(bytes / 1024).toFixed(1)} KiB`;
}

/** KV bytes one token takes: keys and values of every layer. */
export function kvBytesPerToken(spec: { numLayers: number; numKeyValueHeads: number; headDim: number }, kvType: 'float32' | 'float16'): number {
  return 2 * spec.numLayers * spec.numKeyValueHeads * spec.headDim * (kvType === 'float16' ? 2 : 4);
}

/** Throws (a startup refusal) when a set maxSeqLen's sequence does not fit the budget. */
export function planContext(settings: ContextSettings): ContextPlan {
  const { modelContext, maxSeqLen, bytesPerToken, kvCacheMemoryBytes: budget } = settings;
  const notes: string[] = [];
  // Slots the cache may hold for a sequence of `context` tokens (a quarter more, up to the model's).
  const sequenceBytes = (context: number) => slotRoom(context, modelContext) * bytesPerToken;
  let contextLength = Math.min(modelContext, maxSeqLen ?? modelContext);
  let origin = maxSeqLen !== null && maxSeqLen < modelContext ? `maxSeqLen; the model's is ${modelContext}` : "the model's config";
  if (maxSeqLen !== null && maxSeqLen > modelContext) {
    notes.push(`maxSeqLen ${maxSeqLen} is more than the model's context: serving the model's ${modelContext} tokens.`);
  }
  if (sequenceBytes(contextLength) > budget) {
    const need = formatBytes(sequenceBytes(contextLength));
    if (maxSeqLen !== null && maxSeqLen <= modelContext) {
      throw new Error(
        `maxSeqLen ${maxSeqLen} needs ${need} of KV cache for one sequence, more than kvCacheMemoryBytes (${formatBytes(budget)}): ` +
          'lower maxSeqLen (MAX_SEQ_LEN) or raise kvCacheMemoryBytes (KV_CACHE_MEMORY_BYTES).',
      );
    }
    let lowered = Math.floor(budget / bytesPerToken / SLOT_BLOCK) * SLOT_BLOCK;
    while (lowered > 0 && sequenceBytes(lowered) > budget) lowered -= SLOT_BLOCK;
    if (lowered < SLOT_BLOCK) {
      throw new Error(
        `One sequence of ${SLOT_BLOCK} tokens needs ${formatBytes(sequenceBytes(SLOT_BLOCK))} of KV cache, more than kvCacheMemoryBytes (${formatBytes(budget)}): raise kvCacheMemoryBytes (KV_CACHE_MEMORY_BYTES).`,
      );
    }
    notes.push(
      `Context lowered from the model's ${modelContext} tokens to ${lowered}: one sequence's KV cache at ${modelContext} would take ${need}, ` +
        `more than kvCacheMemoryBytes (${formatBytes(budget)}). MAX_SEQ_LEN lowers it further, KV_CACHE_MEMORY_BYTES raises the budget.`,
    );
    contextLength = lowered;
    origin = 'lowered to fit kvCacheMemoryBytes';
  }
  const perSequence = sequenceBytes(contextLength);
  let rows = settings.maxRunningSequences;
  if (rowRoom(rows) * perSequence > budget) {
    rows = 1;
    while (rows * 2 * perSequence <= budget) rows *= 2;
    notes.push(
      `At most ${rows} sequences run together (maxRunningSequences is ${settings.maxRunningSequences}): the KV cache holds every row at the longest row's length, ` +
        `and ${rows} rows at the full context take ${formatBytes(rows * perSequence)} of kvCacheMemoryBytes (${formatBytes(budget)}).`,
    );
  }
  notes.unshift(
    `Context: ${contextLength} tokens (${origin}); KV cache up to ${formatBytes(perSequence)} per full-context sequence, ${formatBytes(rowRoom(rows) * perSequence)} for ${rowRoom(rows)} rows.`,
  );
  return { contextLength, maxRunningSequences: rows, notes };
}
