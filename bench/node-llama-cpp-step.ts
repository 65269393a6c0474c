/**
 * Issue #38's spike question, measured: what one decode step of the 135M-shaped q4 model
 * costs through llama.cpp's own kernels inside this Node process (node-llama-cpp, as a
 * GGUF engine behind the engine interface would run it), beside our onnxruntime step, in
 * alternating rounds in the same process: CPU time (process user + system) and wall per
 * token. node-llama-cpp is not a dependency: it is found where scripts/peer installs it
 * (~/.cache/edge-llm/llama-server/npm) or at NODE_LLAMA_CPP (its dist/index.js).
 *
 *   npx tsx bench/node-llama-cpp-step.ts [threads=1] [tokens=128] [rounds=4] [q4|fp32]
 */
import { homedir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import * as ort from 'onnxruntime-node';
import { stepFeeds } from './fp32-bound/feeds.js';
import { ensureBenchModel } from './size-models.js';
import { median } from './stats.js';

const [threads = 1, tokens = 128, rounds = 4] = process.argv.slice(2, 5).map(Number);
const dtype = process.argv[5] === 'fp32' ? 'fp32' : 'q4';
const modulePath = process.env.NODE_LLAMA_CPP ?? join(homedir(), '.cache/edge-llm/llama-server/npm/node_modules/node-llama-cpp/dist/index.js');
/** The few calls used here (node-llama-cpp 3.x), typed by hand: it is not a dependency. */
interface Sequence {
  clearHistory(): Promise<void>;
  evaluateWithoutGeneratingNewTokens(tokens: number[]): Promise<void>;
  evaluate(tokens: number[], options: { temperature: number }): AsyncGenerator<number>;
}
interface NodeLlamaCpp {
  getLlama(options: object): Promise<{
    loadModel(options: { modelPath: string }): Promise<{
      createContext(options: object): Promise<{ getSequence(): Sequence; dispose(): Promise<void> }>;
      dispose(): Promise<void>;
    }>;
  }>;
}
const { getLlama } = (await import(pathToFileURL(modulePath).href)) as NodeLlamaCpp;

const files = await ensureBenchModel();
const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' });
const model = await llama.loadModel({ modelPath: dtype === 'q4' ? files.gguf.Q4_0 : files.gguf.F32 });
const context = await model.createContext({ contextSize: 1024, batchSize: 256, threads, flashAttention: false });
const sequence = context.getSequence();

const session = await ort.InferenceSession.create(join(files.onnxDir, 'onnx', dtype === 'q4' ? 'model_q4.inplace.onnx' : 'model.inplace.onnx'), {
  intraOpNumThreads: threads,
  interOpNumThreads: 1,
  graphOptimizationLevel: 'all',
  executionMode: 'sequential',
  ...(threads > 1 ? { extra: { session: { intra_op: { allow_spinning: '0' } } } } : {}),
});
// Our step at the mean cache length of llama.cpp's run (prompt 8 + tokens / 2).
const feeds = stepFeeds(session.inputNames, 1, 8 + Math.round(tokens / 2));

const prompt = [300, 301, 302, 303, 304, 305, 306, 307];
const measure = async (work: () => Promise<number>) => {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const count = await work();
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  return { cpu: (cpu.user + cpu.system) / 1000 / count, wall: wall / count };
};
const llamaRun = async () => {
  await sequence.clearHistory();
  // The prompt first, outside the timed part.
  await sequence.evaluateWithoutGeneratingNewTokens(prompt.slice(0, -1));
  let n = 0;
  for await (const _ of sequence.evaluate(prompt.slice(-1), { temperature: 0 })) if (++n >= tokens) break;
  return n;
};
const ortRun = async () => {
  for (let i = 0; i < tokens; i++) await session.run(feeds);
  return tokens;
};
await llamaRun();
await ortRun();
const results = { llama: [] as Array<{ cpu: number; wall: number }>, ort: [] as Array<{ cpu: number; wall: number }> };
for (let round = 0; round < rounds; round++) {
  const order = round % 2 === 0 ? (['llama', 'ort'] as const) : (['ort', 'llama'] as const);
  for (const side of order) results[side].push(await measure(side === 'llama' ? llamaRun : ortRun));
}
console.log(`${dtype}, ${threads} thread(s), ${tokens} tokens × ${rounds} rounds (loaded machine: ratios only)`);
for (const side of ['llama', 'ort'] as const) {
  const cpu = median(results[side].map((r) => r.cpu));
  const wall = median(results[side].map((r) => r.wall));
  console.log(`${side === 'llama' ? `node-llama-cpp (${dtype === 'q4' ? 'Q4_0' : 'F32'} GGUF), sampling included` : `onnxruntime ${dtype} in-place step, graph only`}: CPU ${cpu.toFixed(2)} ms/token, wall ${wall.toFixed(2)} ms/token`);
}
const ratio = (key: 'cpu' | 'wall') => median(results.ort.map((r) => r[key])) / median(results.llama.map((r) => r[key]));
console.log(`ours ÷ node-llama-cpp: CPU ${ratio('cpu').toFixed(2)}×, wall ${ratio('wall').toFixed(2)}×`);
await session.release();
await context.dispose();
await model.dispose();
process.exit(0);
