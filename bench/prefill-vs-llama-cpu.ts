/**
 * Issue #38: a cold 808-token prefill's CPU time, ours (the served q4 graph in onnxruntime-node,
 * one intra-op thread) against llama.cpp's server on the same weights (Q4_0 GGUF, `-t 1 -tb 1`),
 * alternating rounds. CPU time, not wall, so a loaded machine moves it little: ours is this
 * process's user+sys, llama.cpp's the server process's (from /proc/<pid>/stat) around the request.
 *
 *   llama-server -m model-q4_0.gguf --port P -t 1 -tb 1 -c 1024 --parallel 1 &
 *   LLAMA_URL=http://127.0.0.1:P LLAMA_PID=<pid> npx tsx bench/prefill-vs-llama-cpu.ts
 *   VARIANT=~/.cache/edge-llm/bench-models/prefill-variants-seed135/mmi-row8.onnx ...   # also a
 *     graph from scripts/prefill/build-variants.py, in the same rounds
 */
import { readFileSync } from 'node:fs';
import { homedir, loadavg } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { median } from './stats.js';
import { stepFeeds } from './fp32-bound/feeds.js';

const URL = process.env.LLAMA_URL ?? 'http://127.0.0.1:19510';
const PID = Number(process.env.LLAMA_PID);
const ROUNDS = Number(process.env.ROUNDS ?? 7);
const TOKENS = 808;
const MODEL = join(homedir(), '.cache/edge-llm/bench-models/smollm2-135m-shape-seed135-v7/hf/onnx/model_q4.inplace.onnx');
const TICK_MS = 10; // USER_HZ 100

function serverCpuMs(): number {
  const fields = readFileSync(`/proc/${PID}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS; // utime, stime
}

async function main() {
  const session = await ort.InferenceSession.create(MODEL, { intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'all' });
  const feeds = stepFeeds(session.inputNames, 1, 0, TOKENS);
  const ids = Array.from((feeds.input_ids.data as BigInt64Array), Number);
  await session.run(feeds);
  const variant = process.env.VARIANT ? await ort.InferenceSession.create(process.env.VARIANT, { intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'all' }) : null;
  const variantCpu: number[] = [];
  const ours: number[] = [], theirs: number[] = [], theirPromptMs: number[] = [];
  for (let round = 0; round < ROUNDS + 1; round++) {
    const c0 = process.cpuUsage();
    await session.run(feeds);
    const c = process.cpuUsage(c0);
    if (variant) {
      const v0 = process.cpuUsage();
      await variant.run(feeds);
      const v = process.cpuUsage(v0);
      if (round > 0) variantCpu.push((v.user + v.system) / 1000);
    }
    const s0 = serverCpuMs();
    const response = await fetch(`${URL}/completion`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', connection: 'close' },
      body: JSON.stringify({ prompt: ids, n_predict: 1, cache_prompt: false, temperature: 0 }),
    });
    const body = (await response.json()) as { timings: { prompt_n: number; prompt_ms: number } };
    const s1 = serverCpuMs();
    if (round === 0) continue; // warm-up
    if (body.timings.prompt_n !== TOKENS) throw new Error(`llama.cpp prefilled ${body.timings.prompt_n} tokens`);
    ours.push((c.user + c.system) / 1000);
    theirs.push(s1 - s0);
    theirPromptMs.push(body.timings.prompt_ms);
  }
  console.log(`${TOKENS}-token cold prefill, one thread each, ${ROUNDS} rounds, load ${loadavg()[0].toFixed(1)} (loaded machine)`);
  console.log(`ours (q4 graph, session.run): CPU ${median(ours).toFixed(0)} ms`);
  console.log(`llama.cpp (server, whole request): CPU ${median(theirs).toFixed(0)} ms (±${TICK_MS} ms ticks); its prompt_ms ${median(theirPromptMs).toFixed(0)} (wall)`);
  console.log(`ours ÷ llama.cpp CPU: ${(median(ours) / median(theirs)).toFixed(2)}`);
  if (variant) console.log(`variant ${process.env.VARIANT}: CPU ${median(variantCpu).toFixed(0)} ms, ÷ llama.cpp ${(median(variantCpu) / median(theirs)).toFixed(2)}, ÷ ours ${(median(variantCpu) / median(ours)).toFixed(2)}`);
}

main().catch((e) => { console.error(e); process.exit(1); });
