/**
 * llama.cpp's step growth on the workload of step-growth.ts: `rows` greedy streams on one
 * llama-server (`--parallel rows`, 512 positions per slot), each from BOS to the end of its
 * slot's context. llama-server streams one SSE event per sampled token, so the gaps between
 * a stream's events are the server's decode steps; the median gap over the first and last
 * WINDOW tokens, over every stream, as for ours. The server's HTTP runs on its own threads,
 * beside the step; ours is timed at the engine (no HTTP), so llama.cpp's gaps carry a little
 * fixed cost ours do not, which makes its ratio, if anything, smaller.
 */
import { median } from './stats.js';
import { startLlamaServer, type PeerHandle } from './peer.js';

/** Token arrival times of one streamed greedy /completion of `count` tokens from `prompt`. */
async function streamStamps(url: string, prompt: readonly number[], count: number): Promise<number[]> {
  // The OpenAI endpoint: its native /completion refuses a random-weight model's pieces mid-stream.
  const response = await fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'bench', prompt, max_tokens: count, temperature: 0, ignore_eos: true, cache_prompt: false, stream: true }),
  });
  if (!response.ok || response.body === null) throw new Error(`llama-server /v1/completions: HTTP ${response.status}: ${await response.text()}`);
  const stamps: number[] = [];
  const decoder = new TextDecoder();
  let pending = '';
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    const now = performance.now();
    pending += decoder.decode(value, { stream: true });
    let end: number;
    while ((end = pending.indexOf('\n\n')) >= 0) {
      const event = pending.slice(0, end);
      pending = pending.slice(end + 2);
      if (!event.startsWith('data: ') || event === 'data: [DONE]') continue;
      const data = JSON.parse(event.slice('data: '.length)) as { error?: unknown; choices?: Array<{ finish_reason: string | null }> };
      if (data.error !== undefined) throw new Error(`llama-server: ${JSON.stringify(data.error)}`);
      // One event per sampled token; the last one (finish_reason set) closes the stream.
      if (data.choices?.[0]?.finish_reason == null) stamps.push(now);
    }
  }
  return stamps;
}

/** Median gap between consecutive stamps of every stream over [from, to). */
export function windowGaps(streams: readonly number[][], from: number, to: number): number {
  return median(streams.flatMap((stamps) => stamps.slice(from + 1, to).map((t, i) => t - stamps[from + i])));
}

async function measure(peer: PeerHandle, rows: number, context: number, window: number): Promise<{ firstMs: number; lastMs: number }> {
  const bos = 1;
  const streams = await Promise.all(Array.from({ length: rows }, () => streamStamps(peer.url, [bos], context - 1)));
  const length = Math.min(...streams.map((stamps) => stamps.length));
  if (length < 2 * window + 2) throw new Error(`llama-server streamed ${length} tokens, fewer than two windows of ${window}`);
  return { firstMs: windowGaps(streams, 0, window + 1), lastMs: windowGaps(streams, length - window - 1, length) };
}

/** A llama-server for one model, measured a round at a time (so its rounds alternate with ours). */
export interface PeerStepGrowthRunner {
  label: string;
  measure(): Promise<{ firstMs: number; lastMs: number }>;
  stop(): Promise<void>;
}

export async function startPeerStepGrowth(options: {
  gguf: string;
  rows: number;
  threads: number;
  context: number;
  window: number;
  extraArgs?: readonly string[];
}): Promise<PeerStepGrowthRunner> {
  const peer = await startLlamaServer({ gguf: options.gguf, threads: options.threads, parallel: options.rows, slotContext: options.context, extraArgs: options.extraArgs });
  try {
    await measure(peer, Math.min(options.rows, 8), options.context, options.window); // warm-up
  } catch (error) {
    await peer.stop();
    throw error;
  }
  return {
    label: peer.label,
    measure: () => measure(peer, options.rows, options.context, options.window),
    stop: () => peer.stop(),
  };
}
