/**
 * The model's worker thread (worker mode): owns the onnxruntime session (an OnnxDecoder,
 * the same class the main thread uses otherwise) and every KV cache, by id. The main
 * thread sends runs, repacks and releases (protocol.ts) and gets back logits only; the
 * cache never crosses threads.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { LoraSlots } from '../../adapters/lora-slots.js';
import { EngineRequestError } from '../errors.js';
import { emptyKvCache, repackKvCache } from '../kv/kv-cache.js';
import type { KvCache, KvRowSource } from '../kv/types.js';
import { OnnxDecoder } from '../onnx-decoder.js';
import { localInPlaceKv, type InPlaceKvOps } from '../kv/in-place-step.js';
import { loadOnnxruntimeNode } from '../../onnx/ort-native.js';
import { TokenEmbedder } from '../token-embedder.js';
import { EMPTY_CACHE, type FromWorker, type ToWorker, type WireError, type WorkerStart } from './protocol.js';

const port = parentPort!;
const start = workerData as WorkerStart;
const caches = new Map<number, KvCache>();
let decoder: OnnxDecoder | null = null;
let loraSlots: LoraSlots | null = null;
/** In-place graphs: the worker owns the cache's buffers, so it makes each step's layout. */
const inPlaceKv: InPlaceKvOps = localInPlaceKv(start.spec.maxPositionEmbeddings);

function send(message: FromWorker, transfer: ArrayBuffer[] = []): void {
  port.postMessage(message, transfer);
}

function wireError(error: unknown): WireError {
  return { message: error instanceof Error ? error.message : String(error), requestError: error instanceof EngineRequestError };
}

function emptyCache(batch: number, heads: number, headDim: number): KvCache {
  const { spec, contract } = decoder!;
  return emptyKvCache(spec.numLayers, batch, heads, headDim, contract.kvType);
}

function cacheOf(id: number, shape: { batch: number; heads: number; headDim: number }): KvCache {
  if (id === EMPTY_CACHE) return emptyCache(shape.batch, shape.heads, shape.headDim);
  const cache = caches.get(id);
  if (cache === undefined) throw new Error(`the model worker has no KV cache ${id} (released, or its repack failed)`);
  return cache;
}

async function handle(message: ToWorker): Promise<void> {
  switch (message.type) {
    case 'run': {
      const { input, call } = message;
      const started = performance.now();
      try {
        let past = cacheOf(input.past.id, input.past);
        let { attentionMask } = input;
        if (input.cacheLengths !== undefined) ({ past, attentionMask } = inPlaceKv.layout(past, input.cacheLengths, input.seqLen));
        const { logits, present } = await decoder!.run({ ...input, past, attentionMask });
        caches.set(message.present, present);
        // The main thread takes the logits' buffer when they fill it alone; else a copy it can own.
        const { buffer } = logits;
        const whole = logits.byteOffset === 0 && logits.byteLength === buffer.byteLength && buffer instanceof ArrayBuffer;
        const owned = whole ? logits : logits.slice();
        send({ type: 'ran', call, logits: owned, presentLength: present.length, embeddingSize: decoder!.embeddingSize, computeMs: performance.now() - started }, [owned.buffer as ArrayBuffer]);
      } catch (error) {
        send({ type: 'failed', call, error: wireError(error) });
      }
      return;
    }
    case 'repack': {
      try {
        const shape = { batch: 1, heads: message.heads, headDim: message.headDim };
        const sources: KvRowSource[] = message.sources.map((source) => ({ ...source, cache: cacheOf(source.id, shape) }));
        caches.set(message.target, repackKvCache(sources, message.length, emptyCache(0, message.heads, message.headDim), message.padding));
      } catch (error) {
        // The run that reads the target fails ("no KV cache"), which fails that batch's requests.
        console.error(`model worker: a KV repack failed: ${(error as Error).message}`);
      }
      return;
    }
    case 'compact': {
      try {
        const shape = { batch: 0, heads: message.heads, headDim: message.headDim };
        const sources: KvRowSource[] = message.sources.map((source) => ({ ...source, cache: cacheOf(source.id, { ...shape, batch: 1 }) }));
        caches.set(message.target, inPlaceKv.compact(sources, cacheOf(message.current, shape), message.needed));
      } catch (error) {
        console.error(`model worker: a KV compaction failed: ${(error as Error).message}`);
      }
      return;
    }
    case 'release':
      caches.delete(message.id);
      return;
    case 'attachLora': {
      try {
        loraSlots = new LoraSlots(message.layout);
        await decoder!.attachLora(message.model, loraSlots, message.sessionOptions);
        send({ type: 'done', call: message.call });
      } catch (error) {
        send({ type: 'failed', call: message.call, error: wireError(error) });
      }
      return;
    }
    case 'loraTables':
      loraSlots?.a.set(message.a);
      loraSlots?.b.set(message.b);
      return;
    case 'dispose': {
      caches.clear();
      await decoder?.dispose().catch(() => undefined);
      decoder = null;
      send({ type: 'done', call: message.call });
      return;
    }
  }
}

async function main(): Promise<void> {
  const ort = await loadOnnxruntimeNode();
  let embedder: TokenEmbedder | null = null;
  try {
    const { embedTokens } = start;
    if (embedTokens) embedder = await TokenEmbedder.create(ort, embedTokens.model, embedTokens.sessionOptions, embedTokens.file);
    decoder = await OnnxDecoder.create(ort, start.model, start.spec, start.sessionOptions, start.graphLabel, embedder);
    if (decoder.contract.input === 'ids') await embedder?.dispose();
  } catch (error) {
    await embedder?.dispose().catch(() => undefined);
    send({ type: 'startFailed', error: wireError(error) });
    return;
  }
  // One message at a time, in arrival order: a repack must land before the run that reads it.
  let queue = Promise.resolve();
  port.on('message', (message: ToWorker) => {
    // A message that fails must not stop the queue: every later one would wait forever.
    queue = queue.then(() => handle(message)).catch((error: unknown) => console.error(`model worker: ${(error as Error).message}`));
  });
  send({ type: 'ready', contract: decoder.contract });
}

void main();
