/**
 * The k-th largest value of `values` (k is 1-based) in expected O(n), without sorting.
 * `scratch` (length >= values.length) is overwritten; pass a reused buffer to avoid a
 * per-step allocation. Quickselect with a three-way partition, so long runs of equal
 * values (e.g. the -Infinity left by earlier filters) cost no extra passes.
 */
export function kthLargest(values: Float32Array, k: number, scratch: Float32Array): number {
  const n = values.length;
  if (!Number.isInteger(k) || k < 1 || k > n) {
    throw new RangeError(`k must be an integer in [1, ${n}], got ${k}`);
  }
  if (scratch.length < n) throw new RangeError('scratch buffer is shorter than values');
  const a = scratch;
  a.set(values);
  const target = k - 1; // position in descending order
  let lo = 0;
  let hi = n - 1;
  while (lo < hi) {
    const pivot = medianOfThree(a[lo], a[(lo + hi) >>> 1], a[hi]);
    // After the loop: [lo, lt) > pivot, [lt, gt] == pivot, (gt, hi] < pivot.
    let lt = lo;
    let gt = hi;
    let i = lo;
    while (i <= gt) {
      const v = a[i];
      if (v > pivot) {
        a[i] = a[lt];
        a[lt] = v;
        lt++;
        i++;
      } else if (v < pivot) {
        a[i] = a[gt];
        a[gt] = v;
        gt--;
      } else {
        i++;
      }
    }
    if (target < lt) hi = lt - 1;
    else if (target > gt) lo = gt + 1;
    else return pivot;
  }
  return a[lo];
}

/** Median of three values: the quickselect pivot, robust against sorted input. */
export function medianOfThree(x: number, y: number, z: number): number {
  if (x < y) {
    if (y < z) return y;
    return x < z ? z : x;
  }
  if (x < z) return x;
  return y < z ? z : y;
}
