/**
 * What every peer page reports for one greedy request, timed as the in-page engine's
 * benchmark times itself (src/runtime/browser/benchmark.ts): the first token apart, then
 * decode steps per second. Browser code, bundled per page by bench/browser-peers/serve.ts.
 */
export interface PeerRun {
  prefillMs: number;
  stepsPerSecond: number;
  tokens: number;
}

/**
 * Wraps one request: `onToken` is called per streamed chunk; the request resolves with the
 * generated token count when the peer reports it (a chunk may carry several tokens, or none
 * while a UTF-8 character is incomplete), else chunks are counted.
 */
export async function timeRequest(request: (onToken: () => void) => Promise<number | void>): Promise<PeerRun> {
  const started = performance.now();
  let first: number | undefined;
  let last = started;
  let tokens = 0;
  const reported = await request(() => {
    last = performance.now();
    first ??= last;
    tokens++;
  });
  if (typeof reported === 'number') tokens = reported;
  if (first === undefined || tokens < 2) throw new Error(`the peer generated ${tokens} tokens`);
  return { prefillMs: first - started, stepsPerSecond: ((tokens - 1) * 1000) / (last - first), tokens };
}

/** The page's contract with bench/browser.ts. */
export interface PeerPage {
  /** What the page runs on (backend, threads), once loaded. */
  runsOn: string;
  run(tokens: number): Promise<PeerRun>;
}

export function threadsFromQuery(): number {
  return Number(new URLSearchParams(location.search).get('threads') ?? 1);
}

/** "Once upon a time" in the embedded model's vocabulary, BOS first (as browser-benchmark.ts). */
export const PROMPT_TEXT = 'Once upon a time';
