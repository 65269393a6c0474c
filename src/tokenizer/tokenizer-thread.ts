/**
 * Tokenizing off the event loop. A piece the pre-tokenizer cannot cut (a run of CJK with
 * no spaces, one long word, a run of one character) is one synchronous call into the BPE
 * model, and within the prompt-length bound such a piece can still cost seconds (a 65 K
 * character word on a 32 K SentencePiece vocabulary: ~1.7 s; the same length of CJK:
 * ~6 s). Where the home has threads (Node: node-tokenizer-thread.ts) such text is tokenized
 * on one, by a copy of the same tokenizer built from the same files; elsewhere it runs
 * where it did (see encodePrompt in src/http/prompt-tokens.ts).
 */

/** What a tokenizer is built from, exactly as HfTokenizer.fromJson took it: the thread builds its copy from this. */
export interface HfTokenizerSource {
  tokenizerJson: Record<string, unknown>;
  tokenizerConfig: Record<string, unknown>;
  options: { eosTokenIds?: readonly number[] };
}

export interface TokenizerThreadJob {
  text: string;
  addSpecialTokens: boolean;
  /** The thread may stop once it has more ids than this (the prompt is refused either way). */
  stopAfter?: number;
}

export interface TokenizerThread {
  /**
   * tokenizer.encode(text)'s ids (the first stopAfter + 1 or more of them, with stopAfter); the
   * signal's reason once it aborts. Jobs are taken from clients in turn (`client`: who asked,
   * e.g. the connection's address; absent: shared), each under the thread's deadline counted
   * from when it was queued (TokenizerThreadSettings.timeoutMs).
   */
  encode(job: TokenizerThreadJob, signal?: AbortSignal, client?: string): Promise<number[]>;
  /** Stops the thread; jobs still queued are refused. */
  close(): Promise<void>;
}

/** How the runtime sets up its tokenizer thread (Node: the server's maxThreadQueue, maxThreadQueuePerClient, maxTokenizationMs). */
export interface TokenizerThreadSettings {
  /** Jobs that may wait for the thread; past it a 503. */
  maxQueued?: number;
  /** Of those, one client's; past it a 429. */
  maxQueuedPerClient?: number;
  /** A job's deadline, counted from when it was queued: a 503 if it never started, a 400 if it ran past it. */
  timeoutMs?: number;
}

/** maxTokenizationMs's default: 64 K characters of one CJK run on a 32 K vocabulary took ~6 s quiet. */
export const DEFAULT_TOKENIZATION_MS = 20_000;

/**
 * Text whose longest unbroken run is longer than this goes to the thread: ~30 ms of the
 * slowest BPE measured (the 32 K SentencePiece vocabulary on CJK falling back to bytes,
 * ~100 µs a character); ordinary prose never has such runs and stays on the loop, in slices.
 */
export const OFF_LOOP_RUN_CHARS = 256;
