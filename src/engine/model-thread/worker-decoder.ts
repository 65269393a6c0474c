/**
 * The decoder of worker mode: an OnnxDecoder running in a worker thread
 * (decoder-worker.ts), seen from the engine as the same Decoder. While a step runs there,
 * this thread serves HTTP, streams the last step's tokens and admits requests. The KV
 * cache stays in the worker: caches here are handles (remote-kv.ts), and only the ids,
 * the mask and the logits cross, by message (a step of a model worth a worker is
 * milliseconds long, the round trip tens of microseconds: README "Threads").
 */
import type { Worker } from 'node:worker_threads';
import { startModuleWorker } from '../../threads/worker-pool.js';
import type { LoraSlots } from '../../adapters/lora-slots.js';
import type { DecoderContract } from '../loading/decoder-contract.js';
import { EngineRequestError } from '../errors.js';
import type { ModelSpec } from '../../onnx/model-spec.js';
import type { Decoder, DecoderInput, DecoderOutput } from '../onnx-decoder.js';
import type { InferenceSession } from '../../onnx/ort-runtime.js';
import type { FromWorker, ToWorker, WireError, WorkerStart } from './protocol.js';
import { RemoteKvStore, remoteIdOf, remoteInPlaceKv } from './remote-kv.js';
import type { InPlaceKvOps } from '../kv/in-place-step.js';

interface Pending {
  resolve(message: FromWorker): void;
  reject(error: Error): void;
}

function errorOf(error: WireError): Error {
  return error.requestError ? new EngineRequestError(error.message) : new Error(error.message);
}

export class WorkerDecoder implements Decoder {
  private readonly pending = new Map<number, Pending>();
  private nextCall = 1;
  private lora: { slots: LoraSlots; version: number } | null = null;
  private stopped: Error | null = null;
  private lastEmbeddingSize: number | null = null;
  /** Resolves once the worker thread has exited (after dispose, or a crash). */
  readonly exited: Promise<number>;
  readonly kv: RemoteKvStore;
  /** In-place graphs: the worker owns the cache's buffers; compactions and step layouts happen there. */
  readonly inPlaceKv?: InPlaceKvOps;

  private constructor(
    private readonly worker: Worker,
    readonly spec: ModelSpec,
    readonly contract: DecoderContract,
    exited: Promise<number>,
  ) {
    this.exited = exited;
    this.kv = new RemoteKvStore((message) => this.post(message));
    if (contract.kvOutputs === 'new') this.inPlaceKv = remoteInPlaceKv(this.kv);
    worker.on('message', (message: FromWorker) => {
      if (!('call' in message)) return;
      const pending = this.pending.get(message.call);
      if (pending === undefined) return;
      this.pending.delete(message.call);
      if (message.type === 'failed') pending.reject(errorOf(message.error));
      else pending.resolve(message);
    });
    const stop = (reason: Error) => {
      this.stopped ??= reason;
      for (const pending of this.pending.values()) pending.reject(this.stopped);
      this.pending.clear();
    };
    worker.on('error', (error) => stop(new Error(`the model worker failed: ${error.message}`)));
    worker.on('exit', (code) => stop(new Error(`the model worker has stopped (exit code ${code})`)));
  }

  static async create(start: WorkerStart): Promise<WorkerDecoder> {
    const worker = startModuleWorker(import.meta.url, 'decoder-worker', start);
    const exited = new Promise<number>((resolve) => worker.once('exit', resolve));
    const first = await new Promise<FromWorker>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
      worker.once('exit', (code) => reject(new Error(`the model worker stopped while loading (exit code ${code})`)));
    }).catch(async (error: Error) => {
      await worker.terminate();
      throw new Error(`${start.graphLabel} cannot be served: the model worker failed to start: ${error.message}`);
    });
    if (first.type !== 'ready') {
      await worker.terminate();
      throw first.type === 'startFailed' ? new Error(first.error.message) : new Error('the model worker sent an unexpected first message');
    }
    return new WorkerDecoder(worker, start.spec, first.contract, exited);
  }

  get hasLora(): boolean {
    return this.lora !== null;
  }

  /** Set once the thread has gone (a crash, or dispose): every later call fails with it. */
  brokenReason(): string | null {
    return this.stopped?.message ?? null;
  }

  get embeddingSize(): number | null {
    return this.lastEmbeddingSize;
  }

  async run(input: DecoderInput): Promise<DecoderOutput> {
    const { past } = input;
    const lora = this.lora;
    if (lora !== null && lora.version !== lora.slots.version) {
      // A slot was (re)loaded since the last step: the worker's tables follow, in order.
      this.post({ type: 'loraTables', a: lora.slots.a, b: lora.slots.b });
      lora.version = lora.slots.version;
    }
    const pastId = remoteIdOf(past);
    const present = this.kv.create({ batch: input.batch, length: past.length + input.seqLen, heads: past.heads, headDim: past.headDim });
    const reply = await this.call((call) => ({
      type: 'run',
      call,
      present: present.remote!.id,
      input: {
        batch: input.batch,
        seqLen: input.seqLen,
        inputIds: input.inputIds,
        positionIds: input.positionIds,
        attentionMask: input.attentionMask,
        logitsToKeep: input.logitsToKeep,
        placeholders: input.placeholders,
        loraSlots: input.loraSlots === undefined ? undefined : Array.from(input.loraSlots),
        cacheLengths: input.cacheLengths === undefined ? undefined : Int32Array.from(input.cacheLengths),
        past: { id: pastId, batch: past.batch, length: past.length, heads: past.heads, headDim: past.headDim },
      },
    })).catch((error: unknown) => {
      present.remote!.release();
      throw error;
    });
    if (reply.type !== 'ran') throw new Error('the model worker answered a run with something else');
    this.lastEmbeddingSize = reply.embeddingSize;
    present.length = reply.presentLength;
    return { logits: reply.logits, present, computeMs: reply.computeMs };
  }

  async attachLora(model: Uint8Array, slots: LoraSlots, options: InferenceSession.SessionOptions = {}): Promise<void> {
    await this.call((call) => ({ type: 'attachLora', call, model, layout: slots.layout, sessionOptions: options }));
    this.lora = { slots, version: -1 };
  }

  /** Releases the session in the worker, then ends the thread. */
  async dispose(): Promise<void> {
    if (this.stopped === null) await this.call((call) => ({ type: 'dispose', call })).catch(() => undefined);
    await this.worker.terminate();
    await this.exited;
  }

  private call(message: (call: number) => ToWorker): Promise<FromWorker> {
    if (this.stopped) return Promise.reject(this.stopped);
    const call = this.nextCall++;
    return new Promise<FromWorker>((resolve, reject) => {
      this.pending.set(call, { resolve, reject });
      this.post(message(call));
    });
  }

  private post(message: ToWorker): void {
    // After the worker has gone, releases and repacks have nothing left to act on.
    if (this.stopped) return;
    this.worker.postMessage(message);
  }
}
