/** What the engine knows about one sequence when it asks for its next token. */
export interface SequenceHistory {
  promptTokenIds: readonly number[];
  /** Tokens generated so far; append-only between steps of one sequence. */
  outputTokenIds: readonly number[];
}

/**
 * Token statistics the penalties need, kept incrementally: `sync` only looks at tokens
 * appended since the previous call, so a decode step costs O(new tokens), not O(length).
 */
export class TokenHistory {
  /** Distinct tokens of prompt ∪ output (what the repetition penalty touches). */
  readonly seen = new Set<number>();
  /** Occurrences of each token in the output (presence/frequency penalties). */
  readonly outputCounts = new Map<number, number>();
  private promptRef: readonly number[] | null = null;
  private promptLength = 0;
  private outputLength_ = 0;

  static from(history: SequenceHistory): TokenHistory {
    const tokens = new TokenHistory();
    tokens.sync(history);
    return tokens;
  }

  /** Number of generated tokens (what min_tokens compares against). */
  get outputLength(): number {
    return this.outputLength_;
  }

  /**
   * Catch up with `history`. A different prompt, or an output shorter than last time
   * (e.g. a sequence recomputed after preemption), rebuilds from scratch.
   */
  sync(history: SequenceHistory): void {
    const { promptTokenIds, outputTokenIds } = history;
    if (
      promptTokenIds !== this.promptRef ||
      promptTokenIds.length !== this.promptLength ||
      outputTokenIds.length < this.outputLength_
    ) {
      this.reset(promptTokenIds);
    }
    for (let i = this.outputLength_; i < outputTokenIds.length; i++) this.append(outputTokenIds[i]);
  }

  /**
   * Record one generated token directly. The caller's outputTokenIds must grow by the same
   * token, so the next `sync` sees nothing new and counts it only once.
   */
  append(tokenId: number): void {
    this.seen.add(tokenId);
    this.outputCounts.set(tokenId, (this.outputCounts.get(tokenId) ?? 0) + 1);
    this.outputLength_++;
  }

  private reset(promptTokenIds: readonly number[]): void {
    this.seen.clear();
    this.outputCounts.clear();
    this.outputLength_ = 0;
    this.promptRef = promptTokenIds;
    this.promptLength = promptTokenIds.length;
    for (const id of promptTokenIds) this.seen.add(id);
  }
}
