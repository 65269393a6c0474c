/**
 * Issue #38's long-prompt-arrival scenario in process, with a per-gap trace: 8 streams of
 * 128 tokens decoding (16-token prompts), then an 800-token prompt arriving (4 tokens), on
 * the 135M-shaped q4 bench model through createNodeEngine (the server's engine). Prints the
 * streams' inter-token median, p99, p99 ÷ median and longest gap as bench/conversation.ts
 * computes them, the long prompt's TTFT, and which lane passes made the largest gaps (each
 * decode step's gap: what ran since the previous step: slices, the long row's join, the
 * steps after it over the padded KV). Loaded machine: compare runs interleaved, ratios only.
 *
 *   npx tsx bench/join-trace.ts [rounds=2] [longTokens=800]
 * Settings come from the environment as the server's would (LONG_PREFILL_TOKEN_THRESHOLD...).
 */
import { createNodeEngine } from '../src/runtime/node/engine.js';
import { defaultSamplingParams } from '../src/sampling/params.js';
import { setStepTrace, type StepTraceEvent } from '../src/engine/chunked-prefill/step-trace.js';
import { ensureBenchModel } from './size-models.js';
import { median } from './stats.js';

const [rounds = 2, longTokens = 800] = process.argv.slice(2, 4).map(Number);
const files = await ensureBenchModel();
const threshold = Number(process.env.LONG_PREFILL_TOKEN_THRESHOLD ?? 0);
const engine = await createNodeEngine({ modelDir: files.onnxDir, dtype: 'q4', limits: { longPrefillTokenThreshold: threshold } });
const [low, high] = files.promptTokenRange;
let state = 12345;
const random = () => ((state = (state * 1103515245 + 12345) % 2147483648) / 2147483648);
const prompt = (length: number) => Array.from({ length }, () => low + Math.floor(random() * (high - low)));

async function stream(promptTokenIds: number[], maxTokens: number, onToken?: (count: number) => void): Promise<number[]> {
  const times: number[] = [];
  const params = defaultSamplingParams({ temperature: 0, maxTokens, ignoreEos: true });
  for await (const delta of engine.generate({ promptTokenIds, params })) {
    for (let i = 0; i < delta.tokenIds.length; i++) times.push(performance.now());
    onToken?.(times.length);
  }
  return times;
}

async function round(): Promise<void> {
  const events: StepTraceEvent[] = [];
  setStepTrace((event) => events.push(event));
  let decoding = 0;
  let arrive!: () => void;
  const allDecoding = new Promise<void>((resolve) => (arrive = resolve));
  const running = Array.from({ length: 8 }, () => stream(prompt(16), 128, (count) => count === 2 && ++decoding === 8 && arrive()));
  await allDecoding;
  const sent = performance.now();
  const cpu0 = process.cpuUsage();
  const longTimes = stream(prompt(longTokens), 4);
  const [runs, long] = await Promise.all([Promise.all(running), longTimes]);
  const cpu = process.cpuUsage(cpu0);
  setStepTrace(null);
  const gaps = runs.flatMap((times) => times.slice(1).map((at, index) => at - times[index]!)).sort((a, b) => a - b);
  const p99 = gaps[Math.min(gaps.length - 1, Math.floor(gaps.length * 0.99))]!;
  const med = median(gaps);
  console.log(
    `ITL median ${med.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, p99÷median ${(p99 / med).toFixed(2)}, longest ${gaps.at(-1)!.toFixed(0)} ms; ` +
      `long TTFT ${(long[0]! - sent).toFixed(0)} ms; process CPU from arrival ${((cpu.user + cpu.system) / 1000).toFixed(0)} ms`,
  );
  // Each step's gap, labelled with what ran since the previous step ended.
  // Per lane: each step's gap since that lane's previous step, and what ran meanwhile (any lane).
  const previousEnd = new Map<number, number>();
  const since = new Map<number, StepTraceEvent[]>();
  const labelled: Array<{ gap: number; step: StepTraceEvent; what: string }> = [];
  for (const event of events) {
    if (event.at < sent) continue;
    for (const [lane, list] of since) if (lane !== event.lane || event.kind !== 'step') list.push(event);
    if (event.kind !== 'step') continue;
    const lane = event.lane ?? 0;
    if (previousEnd.has(lane)) {
      const what = (since.get(lane) ?? []).map((e) => `${e.kind}${e.lane ?? ''}(${e.ms.toFixed(0)}ms,${e.size}${e.slots ? `,${e.slots}sl` : ''})`).join(' ');
      labelled.push({ gap: event.at - previousEnd.get(lane)!, step: event, what });
    }
    previousEnd.set(lane, event.at);
    since.set(lane, []);
  }
  const byGap = [...labelled].sort((a, b) => b.gap - a.gap);
  const stepMedian = median(labelled.map((each) => each.step.ms));
  console.log(`  steps ${labelled.length}, step median ${stepMedian.toFixed(1)} ms; the largest step gaps (each is 8 stream gaps):`);
  for (const { gap, step, what } of byGap.slice(0, 8)) {
    console.log(`   gap ${gap.toFixed(0)} ms = step${step.lane} ${step.ms.toFixed(0)} ms (rows ${step.size}, slots ${step.slots}) + ${what || '-'}`);
  }
  const joinAt = labelled.findIndex(({ what, step }) => what.includes('admit') && step.size > 1);
  if (joinAt >= 0) console.log(`  the join and the steps after it: ${labelled.slice(joinAt, joinAt + 6).map(({ gap, step }) => `${gap.toFixed(0)}(rows ${step.size})`).join(', ')} ms`);
  const plain = labelled.filter(({ what }) => what === '').map(({ gap }) => gap);
  const sliced = labelled.filter(({ what }) => what.startsWith('slice') && !what.includes('admit')).map(({ gap }) => gap);
  console.log(`  gaps of plain steps: ${plain.length}, median ${median(plain).toFixed(1)} ms; of steps after a slice: ${sliced.length}, median ${median(sliced).toFixed(1)} ms`);
  const slices = events.filter((event) => event.kind === 'slice' && event.at >= sent);
  const streamSteps = events.filter((event) => event.kind === 'step' && event.at >= sent && event.size >= 8 && event.callMs !== undefined);
  if (slices.length > 0 && slices[0]!.callMs !== undefined) {
    console.log(`  model worker's own call time, median: 8-row step ${median(streamSteps.map((e) => e.callMs!)).toFixed(1)} ms, slice ${median(slices.map((e) => e.callMs!)).toFixed(1)} ms (${median(slices.map((e) => e.size))} tokens)`);
  }
  console.log(`  slices ${slices.length}: tokens ${slices.map((s) => s.size).join(',')}; ms median ${median(slices.map((s) => s.ms)).toFixed(0)}`);
}

for (let index = 0; index < rounds; index++) await round();
await engine.dispose();
process.exit(0);
