/**
 * How far one logit row is from a reference row: the largest absolute difference over the
 * reference's largest magnitude (at least 1), Infinity when a value is NaN. The load-time
 * self-tests (batching, prefix reuse) compare the engine's rows with it against a tolerance
 * per KV type.
 */
export function relativeDifference(a: Float32Array, b: Float32Array): number {
  let worst = 0;
  let scale = 1;
  for (let i = 0; i < a.length; i++) {
    worst = Math.max(worst, Math.abs(a[i] - b[i]));
    scale = Math.max(scale, Math.abs(b[i]));
  }
  return Number.isNaN(worst) ? Infinity : worst / scale;
}
