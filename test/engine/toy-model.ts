/**
 * A tiny deterministic "model" and the runner semantics around it, to drive request
 * groups (sampling, beam search) without onnxruntime: every history gets its own fixed
 * pseudo-random logits, and rows fork and continue exactly as the batch runner makes
 * them (a continuing row appends its new token, a fork copies its parent's history).
 */
import { expect } from 'vitest';
import type { BatchRow } from '../../src/engine/batch-row.js';
import type { RequestGroup } from '../../src/engine/sequence-group.js';
import type { SequenceLimits } from '../../src/engine/sequence.js';
import { createRng } from '../../src/sampling/rng.js';
import type { Tokenizer } from '../../src/tokenizer/types.js';

export const TOY_VOCAB = 6;
export const TOY_EOS = 0;

/** Token i > 0 is the letter 'a' + i - 1; EOS (0) is special. */
export const toyTokenizer: Tokenizer = {
  vocabSize: TOY_VOCAB,
  bosTokenId: null,
  eosTokenIds: [TOY_EOS],
  specialTokenIds: new Set([TOY_EOS]),
  encode: (text) => [...text].map((ch) => ch.charCodeAt(0) - 96),
  decode: (ids, options) =>
    ids
      .filter((id) => !(options?.skipSpecialTokens ?? true) || id !== TOY_EOS)
      .map((id) => (id === TOY_EOS ? '<eos>' : String.fromCharCode(96 + id)))
      .join(''),
  idToToken: (id) => String(id),
  tokenToId: (token) => Number(token),
};

export const toyLimits = (maxModelLen = 64): SequenceLimits => ({ vocabSize: TOY_VOCAB, maxModelLen, eosTokenIds: [TOY_EOS] });

/** Logits after `history` (prompt + output): fixed per history, scaled by `sharpness`. */
export function toyLogits(history: readonly number[], options: { eosBias?: number; sharpness?: number } = {}): Float32Array {
  let seed = 1469598103934665603n;
  for (const id of history) seed = BigInt.asUintN(64, (seed ^ BigInt(id + 1)) * 1099511628211n);
  const rng = createRng(seed);
  const logits = Float32Array.from({ length: TOY_VOCAB }, () => (rng.nextFloat() * 4 - 2) * (options.sharpness ?? 1));
  logits[TOY_EOS] += options.eosBias ?? 0;
  return logits;
}

/** Log-softmax in double precision, straight from the definition. */
export function logSoftmax(logits: ArrayLike<number>): number[] {
  const values = Array.from(logits);
  const max = Math.max(...values);
  const total = values.reduce((sum, v) => sum + Math.exp(v - max), 0);
  return values.map((v) => v - max - Math.log(total));
}

/**
 * Runs a group to the end the way the batch runner does: prefill logits for every prompt
 * position, then one step per iteration for the group's live rows in batch order, forks
 * joining at the end. Returns the number of steps run.
 */
export function runToy(group: RequestGroup, prompt: readonly number[], logitsOf: (history: readonly number[]) => Float32Array): number {
  const promptLogits = new Float32Array(prompt.length * TOY_VOCAB);
  for (let i = 0; i < prompt.length; i++) promptLogits.set(logitsOf(prompt.slice(0, i + 1)), i * TOY_VOCAB);
  const start = group.start(promptLogits);
  // Each row's history: the tokens its KV row would hold plus the token it feeds next.
  let rows: Array<{ row: BatchRow; history: number[] }> = start.rows.map((row) => ({ row, history: [...prompt, row.lastTokenId] }));
  let steps = 0;
  while (rows.length > 0) {
    steps += 1;
    if (steps > 1000) throw new Error('the group never finished');
    const before = rows.map(({ history }) => history);
    const stepRows = rows.map(({ row, history }, batchIndex) => {
      row.cachedLength += 1;
      return { row, batchIndex, logits: logitsOf(history), consumed: 1 };
    });
    const { forks } = group.advance(stepRows);
    const next: Array<{ row: BatchRow; history: number[] }> = [];
    rows.forEach(({ row }, i) => {
      if (!row.finished) next.push({ row, history: [...before[i], row.lastTokenId] });
    });
    for (const fork of forks) {
      expect(fork.row.cachedLength).toBe(rows[fork.parentBatchIndex].row.cachedLength);
      next.push({ row: fork.row, history: [...before[fork.parentBatchIndex], fork.row.lastTokenId] });
    }
    rows = next;
  }
  expect(group.finished).toBe(true);
  return steps;
}

