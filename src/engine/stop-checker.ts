/**
 * Stop strings over streamed text. Text arrives in pieces (one per token, split at
 * arbitrary points), so a stop string may span several pushes. The checker emits text as
 * soon as it is certain not to be part of a stop string and holds back only the longest
 * tail that could still grow into one; a client therefore never sees a fragment of a stop
 * string that later matches.
 *
 * Which stop wins: the one that completes first, as if text arrived one character at a
 * time; among stops completing at the same character, the longest (it starts earliest).
 * This makes the result independent of how the text was split into pushes. (vLLM checks
 * stop strings in list order instead; the two agree unless one stop contains another.)
 * Empty stop strings are ignored: they would match before any output.
 */
export interface StopCheckResult {
  /** Text that is final and may be sent to the client now. */
  emit: string;
  /** The stop string that ended generation, or null. */
  matched: string | null;
}

export class StopStringChecker {
  private readonly stops: readonly string[];
  private readonly longestStop: number;
  private pending = '';
  private stopped = false;

  constructor(
    stops: readonly string[],
    private readonly includeStopStrInOutput: boolean,
  ) {
    this.stops = [...new Set(stops.filter((s) => s.length > 0))];
    // A loop, not Math.max(...): a spread of a long list overflows the stack.
    this.longestStop = this.stops.reduce((longest, stop) => Math.max(longest, stop.length), 0);
  }

  /**
   * Feed text that just became final. Once a stop string matched, generation is over:
   * later pushes emit nothing.
   */
  push(text: string): StopCheckResult {
    if (this.stopped) return { emit: '', matched: null };
    if (this.stops.length === 0) return { emit: text, matched: null };

    const pending = this.pending + text;
    const match = this.firstCompletedStop(pending);
    if (match !== null) {
      this.stopped = true;
      this.pending = '';
      const end = this.includeStopStrInOutput ? match.start + match.stop.length : match.start;
      return { emit: pending.slice(0, end), matched: match.stop };
    }
    const held = this.longestStopPrefixAtEnd(pending);
    this.pending = pending.slice(pending.length - held);
    return { emit: pending.slice(0, pending.length - held), matched: null };
  }

  /** Generation ended for another reason: release what was held back. */
  flush(): string {
    const rest = this.pending;
    this.pending = '';
    return rest;
  }

  private firstCompletedStop(text: string): { stop: string; start: number } | null {
    let best: { stop: string; start: number } | null = null;
    let bestEnd = Infinity;
    for (const stop of this.stops) {
      const start = text.indexOf(stop);
      if (start < 0) continue;
      const end = start + stop.length;
      if (end < bestEnd || (end === bestEnd && best !== null && start < best.start)) {
        best = { stop, start };
        bestEnd = end;
      }
    }
    return best;
  }

  /** Length of the longest suffix of `text` that is a proper prefix of some stop string. */
  private longestStopPrefixAtEnd(text: string): number {
    for (let length = Math.min(text.length, this.longestStop - 1); length > 0; length--) {
      const from = text.length - length;
      for (const stop of this.stops) {
        if (stop.length > length && text.startsWith(stop.slice(0, length), from)) return length;
      }
    }
    return 0;
  }
}
