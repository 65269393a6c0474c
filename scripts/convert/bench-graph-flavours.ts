/**
 * Compares the converter's graph flavours on the cost that matters at this model size, one
 * decode step (session.run) at several batch sizes, on onnxruntime-node and onnxruntime-web.
 * Flavours are measured in turn within each iteration, so load from other processes hits
 * them alike; the minimum and median over the iterations are printed.
 *
 * Usage: npx tsx scripts/convert/bench-graph-flavours.ts [checkpoint.bin]
 * Env: BATCHES (default 1,8,32,64), PAST (cached tokens, default 70), ITERS (default 600).
 */
import { readFile } from 'node:fs/promises';
import * as ortNode from 'onnxruntime-node';
import * as ortWeb from 'onnxruntime-web';
import { LLAMA2C_RMS_NORM_EPS } from '../../src/convert/hf-config.js';
import { type DecoderCheckpoint } from '../../src/graph/decoder-checkpoint.js';
import { readLlama2cCheckpoint } from '../../src/convert/llama2c-checkpoint.js';
import { buildLlamaGraph, EXTRA_OPSETS, GRAPH_OPS, type GraphOps } from '../../src/graph/llama-onnx-graph.js';
import { encodeOnnxModel } from '../../src/graph/onnx-writer.js';

type Ort = typeof ortNode;

const DEFAULT_CHECKPOINT = new URL('../../test/fixtures/stories260K/stories260K.bin', import.meta.url);

function encodeFlavour(ckpt: DecoderCheckpoint, ops: GraphOps): Uint8Array {
  return encodeOnnxModel({
    irVersion: 8,
    opsetVersion: 17,
    producerName: 'bench-graph-flavours',
    producerVersion: '0',
    graph: buildLlamaGraph(ckpt, { rmsNormEps: LLAMA2C_RMS_NORM_EPS, ops }),
    extraOpsets: EXTRA_OPSETS[ops],
  });
}

/** Feeds for one decode step: `batch` rows, `past` cached slots each. */
function decodeFeeds(ort: Ort, ckpt: DecoderCheckpoint, batch: number, past: number) {
  const { nLayers, nKvHeads } = ckpt.header;
  const feeds: Record<string, ortNode.Tensor> = {
    input_ids: new ort.Tensor('int64', new BigInt64Array(batch).fill(5n), [batch, 1]),
    attention_mask: new ort.Tensor('int64', new BigInt64Array(batch * (past + 1)).fill(1n), [batch, past + 1]),
    position_ids: new ort.Tensor('int64', new BigInt64Array(batch).fill(BigInt(past)), [batch, 1]),
    num_logits_to_keep: new ort.Tensor('int64', BigInt64Array.of(1n), []),
  };
  const size = batch * nKvHeads * past * ckpt.headDim;
  for (let layer = 0; layer < nLayers; layer++) {
    for (const kind of ['key', 'value']) {
      const data = Float32Array.from({ length: size }, (_, i) => Math.sin(i) * 0.5);
      feeds[`past_key_values.${layer}.${kind}`] = new ort.Tensor('float32', data, [batch, nKvHeads, past, ckpt.headDim]);
    }
  }
  return feeds;
}

async function main(): Promise<void> {
  const checkpointPath = process.argv[2] ?? DEFAULT_CHECKPOINT;
  const batches = (process.env.BATCHES ?? '1,8,32,64').split(',').map(Number);
  const past = Number(process.env.PAST ?? 70);
  const iterations = Number(process.env.ITERS ?? 600);
  const ckpt = readLlama2cCheckpoint(await readFile(checkpointPath));
  const models = GRAPH_OPS.map((ops) => ({ ops, bytes: encodeFlavour(ckpt, ops) }));
  ortWeb.env.wasm.numThreads = 1;
  const runtimes: Array<[string, Ort, ortNode.InferenceSession.SessionOptions]> = [
    ['onnxruntime-node', ortNode, { intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential' }],
    ['onnxruntime-web (wasm)', ortWeb as unknown as Ort, {}],
  ];
  for (const [runtime, ort, options] of runtimes) {
    const sessions = [];
    for (const { bytes } of models) {
      sessions.push(await ort.InferenceSession.create(bytes, { ...options, graphOptimizationLevel: 'all', logSeverityLevel: 3 }));
    }
    for (const batch of batches) {
      const feeds = decodeFeeds(ort, ckpt, batch, past);
      const times = models.map(() => [] as number[]);
      for (let i = 0; i < Math.max(20, Math.round(iterations / Math.sqrt(batch))); i++) {
        for (let m = 0; m < sessions.length; m++) {
          const start = performance.now();
          await sessions[m].run(feeds);
          if (i >= 10) times[m].push((performance.now() - start) * 1000);
        }
      }
      const cells = models.map(({ ops }, m) => {
        const sorted = times[m].sort((a, b) => a - b);
        return `${ops} min ${sorted[0].toFixed(0)} med ${sorted[sorted.length >> 1].toFixed(0)}`;
      });
      console.log(`${runtime} batch ${batch}, ${past} cached [µs per step]: ${cells.join(' | ')}`);
    }
    await Promise.all(sessions.map((s) => s.release()));
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
