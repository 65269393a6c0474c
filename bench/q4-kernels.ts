/**
 * Engine-level A/B of q4 graph variants of the 135M-shaped bench model, in one process and in
 * alternation (paired rounds, medians): one-row decode, 8-row decode (past 128) and a
 * 128-token prefill, each at 1 and 2 intra-op threads.
 *
 *   tsx bench/q4-kernels.ts label=path.onnx [label=path.onnx ...]
 *   Q4_AB_CONFIGS='nospin:session.intra_op.allow_spinning=0;stop:session.force_spinning_stop=1' \
 *     tsx bench/q4-kernels.ts q4=path.onnx      # one model under several session configs
 *
 * Without Q4_AB_CONFIGS a multi-thread session runs without spinning (what the engine does).
 * Prints, per variant and shape, the median ms per call and the ratio to the first variant,
 * with the load average; and the RSS after loading each session (vs the file size).
 */
import { statSync } from 'node:fs';
import { loadavg } from 'node:os';
import * as ort from 'onnxruntime-node';
import { SMOLLM2_135M_SHAPE } from './size-models.js';
import { median } from './stats.js';
import { configTree } from './kernels/ort-kernels.js';

const { nLayers, nKvHeads, dim, nHeads, vocabSize } = SMOLLM2_135M_SHAPE;
const headDim = dim / nHeads;
const ROUNDS = Number(process.env.Q4_AB_ROUNDS ?? 7);
const THREADS = (process.env.Q4_AB_THREADS ?? '1,2').split(',').map(Number);
/** name:key=value,key=value;name:... -> each model is timed under each named session config. */
const CONFIGS: Array<{ name: string; entries: Record<string, string> }> | undefined = process.env.Q4_AB_CONFIGS?.split(';').map((spec) => {
  const [name, list = ''] = spec.split(':');
  return { name, entries: Object.fromEntries(list.split(',').filter(Boolean).map((kv) => kv.split('=') as [string, string])) };
});

interface Shape {
  name: string;
  rows: number;
  newTokens: number;
  past: number;
  /** Calls per timed sample. */
  calls: number;
}
const SHAPES: Shape[] = [
  { name: 'decode 1 row', rows: 1, newTokens: 1, past: 128, calls: 8 },
  { name: 'decode 8 rows', rows: 8, newTokens: 1, past: 128, calls: 4 },
  { name: 'prefill 128', rows: 1, newTokens: 128, past: 0, calls: 1 },
];

function feeds(shape: Shape): Record<string, ort.Tensor> {
  const { rows, newTokens, past } = shape;
  const ids = BigInt64Array.from({ length: rows * newTokens }, (_, i) => BigInt(300 + ((i * 7919) % (vocabSize - 400))));
  const mask = new BigInt64Array(rows * (past + newTokens)).fill(1n);
  const positions = BigInt64Array.from({ length: rows * newTokens }, (_, i) => BigInt(past + (i % newTokens)));
  const out: Record<string, ort.Tensor> = {
    input_ids: new ort.Tensor('int64', ids, [rows, newTokens]),
    attention_mask: new ort.Tensor('int64', mask, [rows, past + newTokens]),
    position_ids: new ort.Tensor('int64', positions, [rows, newTokens]),
    // The engine projects the last position only (src/graph/logits-to-keep.ts).
    num_logits_to_keep: new ort.Tensor('int64', BigInt64Array.of(1n), []),
  };
  const kv = Float32Array.from({ length: rows * nKvHeads * past * headDim }, (_, i) => Math.sin(i) * 0.5);
  for (let l = 0; l < nLayers; l++) {
    out[`past_key_values.${l}.key`] = new ort.Tensor('float32', kv, [rows, nKvHeads, past, headDim]);
    out[`past_key_values.${l}.value`] = new ort.Tensor('float32', kv, [rows, nKvHeads, past, headDim]);
  }
  return out;
}

const rssMiB = () => process.memoryUsage().rss / 2 ** 20;

async function main() {
  const models = process.argv.slice(2).map((arg) => {
    const [label, path] = arg.split('=');
    return { label, path };
  });
  const variants = CONFIGS
    ? models.flatMap((m) => CONFIGS.map((c) => ({ label: models.length > 1 ? `${m.label}/${c.name}` : c.name, path: m.path, config: c.entries })))
    : models.map((m) => ({ ...m, config: undefined }));
  if (variants.length === 0) throw new Error('usage: tsx bench/q4-kernels.ts label=model.onnx ...');
  const sessions: Array<{ label: string; threads: number; session: ort.InferenceSession }> = [];
  for (const { label, path, config } of variants) {
    for (const threads of THREADS) {
      const before = rssMiB();
      const session = await ort.InferenceSession.create(path, {
        intraOpNumThreads: threads,
        interOpNumThreads: 1,
        graphOptimizationLevel: 'all',
        executionMode: 'sequential',
        ...(config ? { extra: { session: configTree(config) } } : threads > 1 ? { extra: { session: { intra_op: { allow_spinning: '0' } } } } : {}),
      });
      const grown = rssMiB() - before;
      console.log(`${label} t${threads}: RSS +${grown.toFixed(0)} MiB after load (file ${(statSync(path).size / 2 ** 20).toFixed(0)} MiB)`);
      sessions.push({ label, threads, session });
    }
  }
  const shapeFeeds = SHAPES.map(feeds);
  // Warm-up.
  for (const s of sessions) for (const f of shapeFeeds) await s.session.run(f);
  const times = new Map<string, number[]>();
  const loadBefore = loadavg();
  for (let round = 0; round < ROUNDS; round++) {
    const order = sessions.map((_, i) => sessions[(i + round) % sessions.length]);
    for (const s of order) {
      for (const [i, shape] of SHAPES.entries()) {
        const started = performance.now();
        for (let c = 0; c < shape.calls; c++) await s.session.run(shapeFeeds[i]);
        const key = `${s.label}|${s.threads}|${shape.name}`;
        (times.get(key) ?? times.set(key, []).get(key)!).push((performance.now() - started) / shape.calls);
      }
    }
  }
  const loadAfter = loadavg();
  console.log(`load average ${loadBefore.map((x) => x.toFixed(1)).join(' ')} -> ${loadAfter.map((x) => x.toFixed(1)).join(' ')}; ${ROUNDS} rounds`);
  for (const threads of THREADS) {
    for (const shape of SHAPES) {
      const base = median(times.get(`${variants[0].label}|${threads}|${shape.name}`)!);
      const cells = variants.map(({ label }) => {
        const ms = median(times.get(`${label}|${threads}|${shape.name}`)!);
        return `${label} ${ms.toFixed(2)} ms (${(base / ms).toFixed(2)}x)`;
      });
      console.log(`t${threads} ${shape.name}: ${cells.join(' | ')}`);
    }
  }
  // Paired ratio per round for the last variant vs the first (less sensitive to load swings).
  if (variants.length > 1) {
    for (const threads of THREADS) {
      for (const shape of SHAPES) {
        const a = times.get(`${variants[0].label}|${threads}|${shape.name}`)!;
        for (const v of variants.slice(1)) {
          const b = times.get(`${v.label}|${threads}|${shape.name}`)!;
          console.log(`paired t${threads} ${shape.name} ${variants[0].label}/${v.label}: ${median(a.map((x, i) => x / b[i])).toFixed(2)}x speed-up`);
        }
      }
    }
  }
}

await main();
