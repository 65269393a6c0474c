/**
 * transformers.js in Node (onnxruntime-node, its text-generation model.generate, greedy) on the
 * same ONNX folder our server serves, beside our server over HTTP, in interleaved rounds:
 * one request (16-token prompt), TTFT (128-token prompt) and 8 streams. transformers.js
 * runs in this process with its defaults (what a Node app that imports it gets), so it pays
 * no HTTP; our figures are end to end over loopback. Its 8 streams are measured two ways,
 * 8 concurrent generate() calls (a server handling 8 users) and one generate() on a batch
 * of 8 equal-length prompts (its batching); its best is the peer figure.
 */
import { loadavg } from 'node:os';
import { AutoModelForCausalLM, BaseStreamer, env, Tensor, type PreTrainedModel, type TextStreamer } from '@huggingface/transformers';
import { startServer } from './http.js';
import { aggregateTokensPerSecond, completionTokensPerSecond, streamTiming, type CompletionTarget } from './load-client.js';
import { randomPrompts } from './size.js';
import { median } from './stats.js';
import { benchModelWanted, warmUp } from './warm-up.js';

export interface NodePeerModel {
  model: string;
  dtype: 'fp32' | 'q4';
  onnxDir: string;
  promptRange: [number, number];
}

export interface NodePeerFigures {
  singleTokPerSec: number;
  ttftMs: number;
  streams8TokPerSec: number;
}

export interface NodePeerRow extends NodePeerModel {
  ours: NodePeerFigures;
  transformers: NodePeerFigures & { concurrent8TokPerSec: number; batch8TokPerSec: number };
  /** Medians of the per-round ratios ours ÷ transformers.js (TTFT: below 1 is better). */
  paired: { single: number; ttft: number; streams8: number };
  loadAverage: { before: number; after: number };
}

export interface NodePeerOptions {
  rounds: number;
  maxTokens: number;
  ttftPromptTokens: number;
  log?: (line: string) => void;
}

const PROMPT_TOKENS = 16;
const STREAMS = 8;

/** Counts generated tokens: generate() puts the prompt once, then each new token. */
class FirstToken extends BaseStreamer {
  private puts = 0;
  firstAt = NaN;
  override put(): void {
    if (++this.puts === 2) this.firstAt = performance.now();
  }
  override end(): void {}
}

function ids(prompts: ReadonlyArray<readonly number[]>): { input_ids: Tensor; attention_mask: Tensor } {
  const length = prompts[0]!.length;
  const flat = BigInt64Array.from(prompts.flat(), (id) => BigInt(id));
  return {
    input_ids: new Tensor('int64', flat, [prompts.length, length]),
    attention_mask: new Tensor('int64', new BigInt64Array(flat.length).fill(1n), [prompts.length, length]),
  };
}

class TransformersPeer {
  private constructor(private readonly model: PreTrainedModel) {}

  static async load(onnxDir: string, dtype: 'fp32' | 'q4'): Promise<TransformersPeer> {
    env.allowRemoteModels = false;
    env.allowLocalModels = true;
    const model = await AutoModelForCausalLM.from_pretrained(onnxDir, { dtype, device: 'cpu' });
    return new TransformersPeer(model);
  }

  /** Greedy, EOS ignored (min_new_tokens), as our requests' ignore_eos. */
  async generate(prompts: ReadonlyArray<readonly number[]>, maxTokens: number, streamer?: BaseStreamer): Promise<void> {
    const output = (await this.model.generate({
      ...ids(prompts),
      max_new_tokens: maxTokens,
      min_new_tokens: maxTokens,
      do_sample: false,
      // Typed as a TextStreamer in its .d.ts; generate() calls only BaseStreamer's put/end.
      streamer: streamer as TextStreamer | undefined,
    })) as Tensor;
    const generated = output.dims[1]! - prompts[0]!.length;
    if (generated !== maxTokens) throw new Error(`transformers.js generated ${generated} tokens, asked for ${maxTokens}`);
  }

  async single(prompt: readonly number[], maxTokens: number): Promise<number> {
    const start = performance.now();
    await this.generate([prompt], maxTokens);
    return (maxTokens * 1000) / (performance.now() - start);
  }

  async ttft(prompt: readonly number[], maxTokens: number): Promise<number> {
    const streamer = new FirstToken();
    const start = performance.now();
    await this.generate([prompt], maxTokens, streamer);
    return streamer.firstAt - start;
  }

  async concurrent(prompts: ReadonlyArray<readonly number[]>, maxTokens: number): Promise<number> {
    const start = performance.now();
    await Promise.all(prompts.map((prompt) => this.generate([prompt], maxTokens)));
    return (prompts.length * maxTokens * 1000) / (performance.now() - start);
  }

  async batch(prompts: ReadonlyArray<readonly number[]>, maxTokens: number): Promise<number> {
    const start = performance.now();
    await this.generate(prompts, maxTokens);
    return (prompts.length * maxTokens * 1000) / (performance.now() - start);
  }

  dispose(): Promise<unknown> {
    return this.model.dispose();
  }
}

export async function benchNodePeer(spec: NodePeerModel, options: NodePeerOptions): Promise<NodePeerRow> {
  const log = options.log ?? (() => {});
  const { maxTokens } = options;
  const before = loadavg()[0];
  log(`\n${spec.model} ${spec.dtype}: our server vs transformers.js in Node, ${options.rounds} interleaved rounds`);
  const server = await startServer({ MODEL_DIR: spec.onnxDir, MODEL_DTYPE: spec.dtype, SERVED_MODEL_NAME: 'bench' });
  const peer = await TransformersPeer.load(spec.onnxDir, spec.dtype);
  const target: CompletionTarget = { label: `this project (${spec.dtype})`, url: server.url, model: 'bench', keepAlive: true };
  const ours = { single: [] as number[], ttft: [] as number[], streams: [] as number[] };
  const theirs = { single: [] as number[], ttft: [] as number[], concurrent: [] as number[], batch: [] as number[] };
  try {
    const warm = randomPrompts(STREAMS, PROMPT_TOKENS, spec.promptRange, 3);
    await aggregateTokensPerSecond(target, warm, 8);
    await peer.concurrent(warm, 8);
    await peer.batch(warm, 8);
    // Both sides are JavaScript: each decodes the same warm-up before anything is measured (bench/warm-up.ts).
    const warmPrompt = (index: number) => randomPrompts(1, PROMPT_TOKENS, spec.promptRange, 500 + index)[0]!;
    await warmUp((tokens, index) => completionTokensPerSecond(target, warmPrompt(index), tokens));
    await warmUp((tokens, index) => peer.single(warmPrompt(index), tokens));
    for (let round = 0; round < options.rounds; round++) {
      const single = randomPrompts(1, PROMPT_TOKENS, spec.promptRange, 1000 * round + 1)[0]!;
      const long = randomPrompts(1, options.ttftPromptTokens, spec.promptRange, 1000 * round + 2)[0]!;
      const streams = randomPrompts(STREAMS, PROMPT_TOKENS, spec.promptRange, 1000 * round + 3);
      const sides = [
        async () => {
          ours.single.push(await completionTokensPerSecond(target, single, maxTokens));
          ours.ttft.push((await streamTiming(target, long, maxTokens)).ttftMs);
          ours.streams.push(await aggregateTokensPerSecond(target, streams, maxTokens));
        },
        async () => {
          theirs.single.push(await peer.single(single, maxTokens));
          theirs.ttft.push(await peer.ttft(long, maxTokens));
          theirs.concurrent.push(await peer.concurrent(streams, maxTokens));
          theirs.batch.push(await peer.batch(streams, maxTokens));
        },
      ];
      // Alternate which side goes first, so a slow phase of the machine hits both.
      for (const side of round % 2 === 0 ? sides : sides.reverse()) await side();
      log(`  round ${round + 1}/${options.rounds} done (load ${loadavg()[0].toFixed(2)})`);
    }
  } finally {
    await Promise.all([server.stop(), peer.dispose()]);
  }
  const best8 = theirs.concurrent.map((c, i) => Math.max(c, theirs.batch[i]!));
  const pairedRatio = (a: number[], b: number[]) => median(a.map((value, i) => value / b[i]!));
  return {
    ...spec,
    ours: { singleTokPerSec: median(ours.single), ttftMs: median(ours.ttft), streams8TokPerSec: median(ours.streams) },
    transformers: {
      singleTokPerSec: median(theirs.single),
      ttftMs: median(theirs.ttft),
      streams8TokPerSec: median(best8),
      concurrent8TokPerSec: median(theirs.concurrent),
      batch8TokPerSec: median(theirs.batch),
    },
    paired: { single: pairedRatio(ours.single, theirs.single), ttft: pairedRatio(ours.ttft, theirs.ttft), streams8: pairedRatio(ours.streams, best8) },
    loadAverage: { before, after: loadavg()[0] },
  };
}

/** The models of the Node peer section: the embedded stories260K, and the 135M-shaped bench model's fp32 and q4 graphs. */
export function nodePeerModels(embeddedDir: string, bench: { onnxDir: string; promptTokenRange: [number, number] } | null): NodePeerModel[] {
  const models: NodePeerModel[] = benchModelWanted('stories260k') ? [{ model: 'stories260K (embedded)', dtype: 'fp32', onnxDir: embeddedDir, promptRange: [259, 512] }] : [];
  if (bench) {
    for (const dtype of ['fp32', 'q4'] as const) {
      if (benchModelWanted(dtype === 'fp32' ? '135m-fp32' : '135m-q4')) models.push({ model: '135M-shaped', dtype, onnxDir: bench.onnxDir, promptRange: bench.promptTokenRange });
    }
  }
  return models;
}
