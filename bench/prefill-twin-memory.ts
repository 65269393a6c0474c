/**
 * Issue #38: what a prefill twin session would cost in memory. One process per case (run it
 * once per case): the served q4 session alone, or beside a twin graph from
 * scripts/prefill/build-variants.py; the prefilling session (the twin if any) runs one
 * 808-token cold prefill, the q4 session one one-token step. Prints the RSS after loading and the peak RSS (getrusage maxrss).
 *
 *   npx tsx bench/prefill-twin-memory.ts [twin variant, e.g. mmi-row8]
 */
import { homedir } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { stepFeeds } from './fp32-bound/feeds.js';

const DIR = join(homedir(), '.cache/edge-llm/bench-models');
const SERVED = join(DIR, 'smollm2-135m-shape-seed135-v7/hf/onnx/model_q4.inplace.onnx');
const twin = process.argv[2];
const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(0);
const options: ort.InferenceSession.SessionOptions = { intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'all' };

async function main() {
  const start = process.memoryUsage().rss;
  const sessions = [await ort.InferenceSession.create(SERVED, options)];
  if (twin) sessions.push(await ort.InferenceSession.create(join(DIR, 'prefill-variants-seed135', `${twin}.onnx`), options));
  const loaded = process.memoryUsage().rss;
  // With a twin, the twin prefills and the q4 session only decodes (what serving it would do).
  const [served, prefill = served] = sessions;
  await prefill.run(stepFeeds(prefill.inputNames, 1, 0, 808));
  await served.run(stepFeeds(served.inputNames, 1, 0, 1));
  console.log(
    `${twin ? `q4 + ${twin} twin` : 'q4 alone'}: rss at start ${mib(start)} MiB, after loading ${mib(loaded)} MiB, ` +
      `peak ${mib(process.resourceUsage().maxRSS * 1024)} MiB`,
  );
}

main().catch((e) => { console.error(e); process.exit(1); });
