import type { LogitsProcessor } from '../logits-processor.js';
import { scratchFloat64 } from '../scratch.js';
import { medianOfThree } from '../select.js';

/**
 * Nucleus filtering as in vLLM 0.6: rank tokens by probability and keep a token when the
 * mass of the tokens ranked above it is still < topP. That is the smallest head of the
 * ranking whose mass reaches topP, and the top token always survives. Equal-probability
 * tokens are ranked by lower token id first (vLLM's sort leaves them arbitrary).
 *
 * No sort: a weighted quickselect over the unnormalised probabilities finds the cut
 * probability in expected O(vocab), so flat distributions that need tens of thousands of
 * tokens cost no more than peaked ones.
 */
export class TopPProcessor implements LogitsProcessor {
  constructor(private readonly topP: number) {}

  process(logits: Float32Array): void {
    if (this.topP >= 1) return;
    const n = logits.length;
    let max = -Infinity;
    for (let i = 0; i < n; i++) if (logits[i] > max) max = logits[i];
    if (max === -Infinity) return;

    // Unnormalised probabilities, in id order; `target` is topP of their total.
    const weights = scratchFloat64('weights', n);
    const work = scratchFloat64('work', n);
    let total = 0;
    let count = 0;
    for (let i = 0; i < n; i++) {
      // exp(-Infinity) is 0: banned tokens (most of the row after top-k) skip the call.
      const logit = logits[i];
      const w = logit === -Infinity ? 0 : Math.exp(logit - max);
      weights[i] = w;
      total += w;
      if (w > 0) work[count++] = w;
    }
    const target = Math.max(this.topP, 0) * total;

    const cut = findCut(work, count, target);
    if (cut === null) return; // rounding kept the head short of topP: everything stays

    // Tokens tied at the cut join in id order while the mass above them is < target.
    let massAbove = cut.massAbove;
    let tiesKept = 0;
    for (let i = 0; i < n; i++) {
      const w = weights[i];
      if (w > cut.weight) continue;
      if (w === cut.weight && (tiesKept === 0 || massAbove < target)) {
        massAbove += w;
        tiesKept++;
        continue;
      }
      logits[i] = -Infinity;
    }
  }
}

/**
 * The weight of the first token (in descending order) at which the running mass reaches
 * `target`, and the mass strictly above that weight. Reorders values[0, count).
 */
function findCut(
  values: Float64Array,
  count: number,
  target: number,
): { weight: number; massAbove: number } | null {
  let lo = 0;
  let hi = count - 1;
  let above = 0; // mass of everything ranked before values[lo]
  while (lo <= hi) {
    const pivot = medianOfThree(values[lo], values[(lo + hi) >>> 1], values[hi]);
    // Three-way partition: [lo, lt) > pivot, [lt, gt] == pivot, (gt, hi] < pivot.
    let lt = lo;
    let gt = hi;
    let i = lo;
    let greater = 0;
    let equal = 0;
    while (i <= gt) {
      const v = values[i];
      if (v > pivot) {
        greater += v;
        values[i] = values[lt];
        values[lt] = v;
        lt++;
        i++;
      } else if (v < pivot) {
        values[i] = values[gt];
        values[gt] = v;
        gt--;
      } else {
        equal += v;
        i++;
      }
    }
    if (greater > 0 && above + greater >= target) {
      hi = lt - 1;
    } else if (above + greater + equal >= target) {
      return { weight: pivot, massAbove: above + greater };
    } else {
      above += greater + equal;
      lo = gt + 1;
    }
  }
  return null;
}
