/**
 * The adapters a LoRA graph can run at once (maxLoras slots), packed into its `lora_a` /
 * `lora_b` inputs (layout in lora-graph.ts), and the per-row mask that picks each row's
 * slot. A slot is rewritten only when an adapter that is not in one is needed and a slot
 * no running request uses is free; the least recently used such slot goes.
 */
import type { LoraAdapter } from './peft-adapter.js';
import type { LoraGraphLayout } from './lora-graph.js';

export class LoraSlots {
  /** [aRows, maxLanes·slots·R] */
  readonly a: Float32Array;
  /** [maxLanes·slots·R, bCols] */
  readonly b: Float32Array;
  /** Columns of one lane: slots·R (the mask's width). */
  readonly laneColumns: number;
  readonly tableColumns: number;
  /** Bumped whenever a slot's contents change (tensors wrapping the tables stay valid). */
  version = 0;
  private readonly occupants: Array<LoraAdapter | null>;
  private readonly lastUsed: number[];
  private clock = 0;

  constructor(readonly layout: LoraGraphLayout) {
    this.laneColumns = layout.slots * layout.rank;
    this.tableColumns = layout.maxLanes * this.laneColumns;
    this.a = new Float32Array(layout.aRows * this.tableColumns);
    this.b = new Float32Array(this.tableColumns * layout.bCols);
    this.occupants = new Array<LoraAdapter | null>(layout.slots).fill(null);
    this.lastUsed = new Array<number>(layout.slots).fill(0);
  }

  /**
   * The slot holding `adapter`, loading it into a free one if needed; null when every slot
   * holds an adapter in `busy` (a running request's): the request then waits.
   */
  acquire(adapter: LoraAdapter, busy: ReadonlySet<LoraAdapter>): number | null {
    let slot = this.occupants.indexOf(adapter);
    if (slot < 0) {
      let best = -1;
      for (let s = 0; s < this.occupants.length; s++) {
        const occupant = this.occupants[s];
        if (occupant === null) {
          best = s;
          break;
        }
        if (busy.has(occupant)) continue;
        if (best < 0 || this.lastUsed[s] < this.lastUsed[best]) best = s;
      }
      if (best < 0) return null;
      slot = best;
      this.write(slot, adapter);
    }
    this.lastUsed[slot] = ++this.clock;
    return slot;
  }

  /** Empties the slot of an unloaded adapter that no request uses any more. */
  release(adapter: LoraAdapter): void {
    const slot = this.occupants.indexOf(adapter);
    if (slot >= 0) this.write(slot, null);
  }

  /** [batch, 1, slots·R]: 1 over the columns of each row's slot, 0 for base rows (slot < 0). */
  mask(slotPerRow: ArrayLike<number>): Float32Array {
    const { rank } = this.layout;
    const width = this.laneColumns;
    const mask = new Float32Array(slotPerRow.length * width);
    for (let row = 0; row < slotPerRow.length; row++) {
      const slot = slotPerRow[row];
      if (slot >= 0) mask.fill(1, row * width + slot * rank, row * width + (slot + 1) * rank);
    }
    return mask;
  }

  private write(slot: number, adapter: LoraAdapter | null): void {
    const { layout, a, b, tableColumns, laneColumns } = this;
    const { rank: R } = layout;
    const weights = new Map((adapter?.modules ?? []).map((m) => [`${m.layer}.${m.module}`, m]));
    for (const target of layout.targets) {
      target.lanes.forEach((lane, laneIndex) => {
        const column0 = laneIndex * laneColumns + slot * R;
        const module = weights.get(`${target.layer}.${lane.module}`);
        const r = module?.rank ?? 0;
        // A: rows aRow.. of the target, columns column0 + j; A is [r, in].
        for (let i = 0; i < target.inDim; i++) {
          const rowStart = (target.aRow + i) * tableColumns + column0;
          for (let j = 0; j < R; j++) a[rowStart + j] = j < r ? module!.a[j * target.inDim + i] : 0;
        }
        // B: rows column0 + j, the lane's columns of the target; B is [width, r], scaled.
        const scale = (module?.scale ?? 0) * lane.scale;
        for (let j = 0; j < R; j++) {
          const rowStart = (column0 + j) * layout.bCols + target.bCol + lane.colStart;
          for (let c = 0; c < lane.width; c++) b[rowStart + c] = j < r ? module!.b[c * r + j] * scale : 0;
        }
      });
    }
    this.occupants[slot] = adapter;
    this.version++;
  }
}
