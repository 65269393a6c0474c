/**
 * One decode step's model call (OnnxDecoder.run, no engine around it) under several
 * session settings, alternating call by call so a loaded machine's swings hit all alike.
 * Prints the median and the 10th percentile per setting.
 *
 *   npx tsx scripts/threads/measure-step.ts <model dir | 135m | 25m | 5m | embedded> [calls] [batch] [past]
 */
import { performance } from 'node:perf_hooks';
import * as ort from 'onnxruntime-node';
import { OnnxDecoder } from '../../src/engine/onnx-decoder.js';
import { promptInput } from '../../src/engine/onnx-decoder.js';
import { emptyKvCache, repackKvCache } from '../../src/engine/kv/kv-cache.js';
import type { KvRowSource } from '../../src/engine/kv/types.js';
import { modelSpecFromFiles } from '../../src/onnx/model-spec.js';
import type { OrtRuntime, InferenceSession } from '../../src/onnx/ort-runtime.js';
import { readModelDir } from '../../src/runtime/node/model-dir.js';
import { measuredModelDir } from './random-llama.js';

const [modelArg = 'embedded', callsArg = '200', batchArg = '1', pastArg = '32'] = process.argv.slice(2);
const modelDir = await measuredModelDir(modelArg);
const calls = Number(callsArg);
const batch = Number(batchArg);
const pastLength = Number(pastArg);
const files = await readModelDir(modelDir, { readExternalData: false });
const { spec } = modelSpecFromFiles(files);

const settings: Array<{ label: string; options: InferenceSession.SessionOptions }> = [
  { label: '1 thread', options: { intraOpNumThreads: 1 } },
  { label: '2 threads', options: { intraOpNumThreads: 2 } },
  { label: '2 threads, no spinning', options: { intraOpNumThreads: 2, extra: { session: { intra_op: { allow_spinning: '0' } } } } },
];
const decoders = [];
for (const setting of settings) {
  const options = { interOpNumThreads: 1, graphOptimizationLevel: 'all', executionMode: 'sequential', ...setting.options } as InferenceSession.SessionOptions;
  decoders.push(await OnnxDecoder.create(ort as unknown as OrtRuntime, files.onnxPath!, spec, options));
}
const empty = emptyKvCache(spec.numLayers, 1, spec.numKeyValueHeads, spec.headDim);
const prompt = Array.from({ length: pastLength }, (_, i) => (i * 37 + 5) % spec.vocabSize);
// Each decoder's own past: `batch` copies of one prefilled prompt.
const pasts = [];
for (const decoder of decoders) {
  const { present } = await decoder.run(promptInput(prompt, empty));
  const sources: KvRowSource[] = Array.from({ length: batch }, () => ({ cache: present, row: 0, realLength: pastLength }));
  pasts.push(repackKvCache(sources, pastLength, present));
}
const input = {
  batch,
  seqLen: 1,
  inputIds: new BigInt64Array(batch).fill(7n),
  positionIds: new BigInt64Array(batch).fill(BigInt(pastLength)),
  attentionMask: new BigInt64Array(batch * (pastLength + 1)).fill(1n),
};
const times = decoders.map(() => [] as number[]);
for (let call = 0; call < calls + 5; call++) {
  for (let k = 0; k < decoders.length; k++) {
    const index = (call + k) % decoders.length;
    const started = performance.now();
    await decoders[index].run({ ...input, past: pasts[index] });
    if (call >= 5) times[index].push(performance.now() - started);
  }
}
const quantile = (values: number[], q: number) => [...values].sort((a, b) => a - b)[Math.floor(values.length * q)];
console.log(`${modelDir}: ${(files.weightBytes! / 1e6).toFixed(1)} MB, batch ${batch}, past ${pastLength}, ${calls} calls each, alternating`);
settings.forEach((setting, index) => {
  console.log(`  ${setting.label.padEnd(24)} median ${quantile(times[index], 0.5).toFixed(2)} ms, p10 ${quantile(times[index], 0.1).toFixed(2)} ms`);
});
for (const decoder of decoders) await decoder.dispose();
