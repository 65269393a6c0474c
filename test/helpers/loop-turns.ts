/**
 * Counts event-loop turns: one beat per turn, each beat queueing the next with setImmediate.
 * Tests read it to say whether the loop turned (sockets, timers, new requests served)
 * while an engine worked, without reading a clock a loaded machine would skew.
 */
export interface LoopTurnCounter {
  /** Turns counted so far. */
  readonly turns: number;
  stop(): void;
}

export function countLoopTurns(): LoopTurnCounter {
  let turns = 0;
  let running = true;
  const beat = () => {
    if (!running) return;
    turns += 1;
    setImmediate(beat);
  };
  setImmediate(beat);
  return {
    get turns() {
      return turns;
    },
    stop() {
      running = false;
    },
  };
}
