/**
 * Runs one graph's decode step N times after a warm-up and exits: for counting what a step
 * does under strace / perf (futex hand-offs between intra-op threads are load-independent,
 * unlike time on a shared machine). Run it twice with different N and subtract:
 *
 *   strace -f -c -e trace=futex npx tsx bench/decode-step-runs.ts path.onnx 2 50
 *   strace -f -c -e trace=futex npx tsx bench/decode-step-runs.ts path.onnx 2 250
 */
import * as ort from 'onnxruntime-node';
import { stepFeeds } from './fp32-bound/feeds.js';

const [path, threadArg = '2', countArg = '100'] = process.argv.slice(2);
const threads = Number(threadArg);
const session = await ort.InferenceSession.create(path, {
  intraOpNumThreads: threads,
  interOpNumThreads: 1,
  graphOptimizationLevel: 'all',
  executionMode: 'sequential',
  ...(threads > 1 ? { extra: { session: { intra_op: { allow_spinning: '0' } } } } : {}),
});
const feeds = stepFeeds(session.inputNames, Number(process.env.AB_ROWS ?? 1), Number(process.env.AB_PAST ?? 128));
for (let i = 0; i < 5; i++) await session.run(feeds);
for (let i = 0; i < Number(countArg); i++) await session.run(feeds);
await session.release();
