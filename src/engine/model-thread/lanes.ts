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
