/**
 * Overlapped steps in worker mode. The running rows are split into lanes, each a batch of
 * its own (a BatchRunner with its own KV cache in the worker), stepped by its own loop:
 * while one lane's model call runs in the worker, this thread samples and streams the
 * other lane's last step and sends its next call, so both cores stay busy. The worker
 * takes calls in order, so the lanes' calls alternate there.
 *
 * A step's fixed cost is paid once per lane, so the second lane only pays once the batch
 * is large enough that this thread's share of a step (sampling, streaming, HTTP) is worth
 * hiding: below `minRows` running rows every request joins the first lane.
 */

export interface PipelineSettings {
  /** Lanes stepped in turn (1: no overlap). */
  lanes: number;
  /** Rows running (all lanes) from which a request may join a lane other than the first. */
  minRows: number;
}

/** Worker mode's default (measured: README "Threads"). */
export const DEFAULT_PIPELINE: PipelineSettings = { lanes: 2, minRows: 16 };

/** One lane: no overlap (main mode, or a graph that cannot batch requests). */
export const NO_PIPELINE: PipelineSettings = { lanes: 1, minRows: 0 };

/**
 * Whether lane `lane` takes the next waiting request, given every lane's load (rows
 * running plus rows joining). The first lane takes it while the batch is small; past
 * that, the least loaded lanes do (ties: any of them), so lanes stay balanced. For any
 * loads, at least one lane takes it.
 */
export function laneTakesRequest(lane: number, loads: readonly number[], minRows: number): boolean {
  if (loads.length === 1) return true;
  let total = 0;
  let least = Infinity;
  for (const load of loads) {
    total += load;
    least = Math.min(least, load);
  }
  if (total < minRows) return lane === 0;
  return loads[lane] === least;
}

/** A lane as ownLaneForLongRow sees it. */
export interface LaneLoad {
  /** Rows running and joining. */
  rows: number;
  /** KV slots of its longest running row. */
  longestRow: number;
  /** No rows, nothing joining, preparing or prefilled in slices. */
  idle: boolean;
}

/** A prompt this many times longer than every running row takes a lane of its own, if one is idle. */
export const LONG_ROW_RATIO = 4;
/** Shorter prompts pad a batch too little to be worth a lane's own steps. */
export const LONG_ROW_MIN_TOKENS = 128;

/**
 * The lane a long prompt's rows go to instead of the one laneTakesRequest picks, or -1.
 *
 * A lane's KV cache is one dense buffer per layer, [rows, heads, slots, headDim], every row
 * with as many slots as the longest (kv/in-place-kv.ts): an 800-token row joining 8 rows of
 * 20 slots moves them all into a buffer of 16 rows × 1024 slots (hundreds of MB, touched
 * page by page in the next step), and every later step's attention reads those slots. So a
 * prompt much longer than every running row is prefilled and decoded in an idle lane of its
 * own: its slices and steps alternate with the busy lane's steps in the model worker, each
 * a one-row call, and nobody's row is padded to its length. A later request joins lanes as
 * laneTakesRequest says (below `minRows`, the first lane).
 */
export function ownLaneForLongRow(promptTokens: number, lanes: readonly LaneLoad[]): number {
  if (lanes.length < 2 || promptTokens < LONG_ROW_MIN_TOKENS) return -1;
  let busy = false;
  let longest = 0;
  for (const lane of lanes) {
    if (lane.rows === 0) continue;
    busy = true;
    longest = Math.max(longest, lane.longestRow);
  }
  if (!busy || promptTokens < LONG_ROW_RATIO * longest) return -1;
  return lanes.findIndex((lane) => lane.idle);
}
