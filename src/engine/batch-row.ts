/**
 * The contract between the batch runner and the requests whose sequences ride in its
 * batch. The runner owns the model side (one forward per step for every row, the KV
 * cache); a request's group owns everything else, and sees all its rows' logits at once
 * after each forward: sampling groups pick a token per row, a beam search group ranks
 * candidates across its rows and may fork them.
 */

/** One sequence as the runner sees it: a KV row and the token it feeds next. */
export interface BatchRow {
  /** The token the next decode step feeds for this row. */
  readonly lastTokenId: number;
  /** Slots of this row in the KV cache (prompt + fed output tokens); the runner advances it. */
  cachedLength: number;
  /** A finished row leaves the batch at the next repack. */
  readonly finished: boolean;
  /**
   * The sequence's token ids, prompt then output: its first `cachedLength` are what its KV
   * row holds, which the prefix cache keeps when it finishes (a chat's next turn reuses the
   * reply too). Rows without it (beams) are not kept.
   */
  sequenceTokenIds?(): readonly number[];
  /**
   * Speculative decoding: up to `maxTokens` guesses of the tokens that follow
   * `lastTokenId`, fed in the same forward pass so the model checks them all at once;
   * none when `onlyIfGuided` and the row has no grammar. Rows without it (beams) never
   * speculate.
   */
  draftTokens?(maxTokens: number, onlyIfGuided: boolean): number[];
  /**
   * A row whose grammar runs on another thread (guided/guide-thread.ts): settles once its
   * next token mask is there; null when it is now. The runner awaits it before the groups
   * sample, so the event loop never waits for that thread.
   */
  guidePending?(): Promise<void> | null;
  /** Whether checking this row's guesses could wait behind a compile on its grammar's thread (its guesses are then dropped). */
  guideBusy?(): boolean;
}

/** Settles once every row's token mask is there (BatchRow.guidePending); null when all are now. */
export function guidesPending(rows: readonly BatchRow[]): Promise<void> | null {
  let waits: Array<Promise<void>> | null = null;
  for (const row of rows) {
    const pending = row.finished ? null : (row.guidePending?.() ?? null);
    if (pending !== null) (waits ??= []).push(pending);
  }
  return waits === null ? null : Promise.all(waits).then(() => undefined);
}

/** A speculative step's view of a row: the guesses fed after its last token and the logits of every fed position. */
export interface StepDraft {
  tokens: readonly number[];
  /** [1 + tokens.length (at least), vocab]: position j's logits predict the token after fed token j. */
  logits: Float32Array;
}

/** A row's logits after one forward. */
export interface StepRow {
  row: BatchRow;
  /** Its place in the batch (and in the cache the forward just produced). */
  batchIndex: number;
  /** Its logits; the group may overwrite them. */
  logits: Float32Array;
  /** Set in a speculative step: the row's guesses, which only a group with `acceptsDrafts` gets. */
  draft?: StepDraft;
  /**
   * Fed positions whose output the group used (tokens appended to the row): 1 in a plain
   * step; in a speculative step the group sets it to 1 + the guesses that proved right.
   */
  consumed: number;
}

/** A new row whose KV cache is a copy of an existing row's (a beam continuing in several ways). */
export interface RowFork {
  row: BatchRow;
  /** The row it copies, by batch index in the cache of the step that was just run. */
  parentBatchIndex: number;
}

export interface StepResult {
  /** Tokens generated this step (for the engine's counters). */
  generated: number;
  /** New rows for the same group, joining at the next repack. */
  forks: RowFork[];
}

export interface RowGroup {
  /** The LoRA slot its rows run with (lora-slots.ts); absent or -1: the base model. */
  readonly loraSlot?: number;
  /** The group can take speculative steps (StepRow.draft); others always get plain ones. */
  readonly acceptsDrafts?: boolean;
  /** Consumes one step's logits for the group's unfinished rows, in batch order. */
  advance(rows: readonly StepRow[]): StepResult;
  /** The model failed: end every row and report `error`. */
  fail(error: unknown): void;
}
