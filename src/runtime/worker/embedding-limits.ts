/**
 * Whether an embedding model fits a Cloudflare Worker, judged from its config.json and the
 * size of its graph: checked when the build bundles it (scripts/build-worker-embeddings.ts)
 * and again when an isolate starts it (embedding-engine.ts). Limits as in gguf-limits.ts
 * (Cloudflare's limits page, read December 2026): 64 MiB upload, 128 MB per isolate.
 *
 * What an isolate holds (measured in Node on onnxruntime-web's same WebAssembly build by
 * scripts/embeddings/measure-worker-memory.ts, docs/workerd.md#an-embedding-model-in-the-worker):
 * onnxruntime-web's WebAssembly heap at start (16 MiB) and the app's JavaScript, the
 * graph's bytes (a Data module, resident), and the WebAssembly heap, which grows and never
 * shrinks: creating the session takes it to about three times the graph (2.78× measured for
 * an int8 MiniLM: its copy of the graph, the parsed graph, the weights), after which the
 * weights hold one and the rest is reused by the model calls. A call's activations grow
 * with its padded tokens and, through the attention scores, with its longest input: the
 * tokens one call may pad to are lowered until the worst call fits.
 */
import { formatBytes } from '../../engine/context-length.js';
import { WORKER_MEMORY_LIMIT_BYTES, WORKER_SIZE_LIMIT_BYTES, type WorkerGgufLimits } from './gguf-limits.js';

/**
 * onnxruntime-web's WebAssembly heap before any model (16.0 MiB measured) and the app's
 * JavaScript heap (9.1 MiB measured in Node, Node's own included), rounded up.
 */
export const WORKER_EMBEDDING_RUNTIME_BYTES = 26 * 1024 ** 2;

/** The WebAssembly heap creating a session takes, in graphs (2.78 measured), rounded up. */
const SESSION_GRAPHS = 3;

/**
 * The embedding Worker's upload without the graph, rounded up: onnxruntime-web's .wasm
 * (13.6 MiB) and the Worker's code; `wrangler deploy --dry-run --env embeddings` (wrangler
 * 4.86) measured it (no XGrammar: an embedding model has no structured output).
 */
export const WORKER_EMBEDDING_CODE_BYTES = 17 * 1024 ** 2;

/** The shape the activation estimate needs, from config.json. */
export interface EmbeddingShape {
  hidden: number;
  heads: number;
  intermediate: number;
  layers: number;
  /** The served context: the longest input. */
  context: number;
}

export interface WorkerEmbeddingPlan {
  fileBytes: number;
  /** The most the isolate holds: at session creation or in the largest model call. */
  peakBytes: number;
  /** Padded tokens (inputs × the longest) one model call may take in this isolate. */
  maxBatchedTokens: number;
  /** The activations of that call, at the longest input. */
  callBytes: number;
}

const num = (value: unknown): number | null => (typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : null);

/** config.json → the shape, or null when a field is missing (then only the size is checked). */
export function embeddingShapeOf(config: Record<string, unknown>, context: number): EmbeddingShape | null {
  const hidden = num(config.hidden_size);
  const heads = num(config.num_attention_heads);
  const layers = num(config.num_hidden_layers);
  if (hidden === null || heads === null || layers === null) return null;
  return { hidden, heads, layers, intermediate: num(config.intermediate_size) ?? 4 * hidden, context };
}

/**
 * One model call's live activations in onnxruntime (a layer's buffers are reused by the
 * next): a layer's hidden states and their projections (q, k, v, the attention output, the
 * residual, the norm: six widths), the feed-forward's two intermediate tensors, and four
 * tensors per head and pair of positions (the exports' unfused attention: scores, scaled,
 * masked, softmax), in float32. A 512-token MiniLM input grew the heap by what this says
 * less the room the session left (measured).
 */
export function callActivationBytes(shape: EmbeddingShape, paddedTokens: number, longest: number): number {
  return 4 * (paddedTokens * (6 * shape.hidden + 2 * shape.intermediate) + 4 * shape.heads * paddedTokens * longest);
}

/** The isolate's memory at the peak of a call of `paddedTokens` whose longest input is `longest` (0, 0: after the session). */
export function workerEmbeddingPeakBytes(fileBytes: number, shape: EmbeddingShape | null, paddedTokens: number, longest: number): number {
  const activations = shape === null || paddedTokens === 0 ? 0 : callActivationBytes(shape, paddedTokens, longest);
  // The Data module, and the WebAssembly heap: the session's high-water mark, or the weights plus the call.
  return WORKER_EMBEDDING_RUNTIME_BYTES + fileBytes + Math.max(SESSION_GRAPHS * fileBytes, fileBytes + activations);
}

/**
 * The plan, or an error saying which limit the graph is past. `requestedTokens` is the
 * server's maxBatchedTokens: lowered (never raised) to what the isolate can hold.
 */
export function planWorkerEmbedding(
  name: string,
  fileBytes: number,
  shape: EmbeddingShape | null,
  requestedTokens: number,
  limits: WorkerGgufLimits,
): WorkerEmbeddingPlan {
  const upload = fileBytes + WORKER_EMBEDDING_CODE_BYTES;
  if (upload > limits.sizeBytes) {
    throw new Error(
      `${name} is ${formatBytes(fileBytes)}: with the Worker's code (${formatBytes(WORKER_EMBEDDING_CODE_BYTES)}) the upload would be ${formatBytes(upload)}, ` +
        `over the Worker size limit of ${formatBytes(limits.sizeBytes)}. A Worker can bundle an embedding graph of at most ${formatBytes(limits.sizeBytes - WORKER_EMBEDDING_CODE_BYTES)} ` +
        '(a quantized export, e.g. onnx/model_quantized.onnx, is a quarter of the float32 one).',
    );
  }
  const atSession = workerEmbeddingPeakBytes(fileBytes, shape, 0, 0);
  if (atSession > limits.memoryBytes) {
    throw new Error(
      `${name} would need about ${formatBytes(atSession)} in the isolate while onnxruntime creates its session (the graph ${formatBytes(fileBytes)} as bundled, ` +
        `${SESSION_GRAPHS} times that inside onnxruntime, onnxruntime and the app ${formatBytes(WORKER_EMBEDDING_RUNTIME_BYTES)}), more than the isolate's ${formatBytes(limits.memoryBytes)} ` +
        `(ISOLATE_MEMORY_BYTES; a Cloudflare Worker has 128 MB). A graph of at most about ${formatBytes(Math.max(0, (limits.memoryBytes - WORKER_EMBEDDING_RUNTIME_BYTES) / (SESSION_GRAPHS + 1)))} fits.`,
    );
  }
  if (shape === null) return { fileBytes, peakBytes: atSession, maxBatchedTokens: requestedTokens, callBytes: 0 };
  const worst = (tokens: number) => workerEmbeddingPeakBytes(fileBytes, shape, tokens, Math.min(shape.context, tokens));
  let tokens = requestedTokens;
  if (worst(tokens) > limits.memoryBytes) {
    // The largest count whose worst call fits (worst grows with tokens).
    let [low, high] = [0, tokens];
    while (low < high) {
      const mid = Math.ceil((low + high) / 2);
      if (worst(mid) <= limits.memoryBytes) low = mid;
      else high = mid - 1;
    }
    tokens = low;
  }
  if (tokens < shape.context) {
    throw new Error(
      `${name}: one input of its full context (${shape.context} tokens) would need about ${formatBytes(callActivationBytes(shape, shape.context, shape.context))} of activations ` +
        `beside ${formatBytes(WORKER_EMBEDDING_RUNTIME_BYTES + 2 * fileBytes)} resident, more than the isolate's ${formatBytes(limits.memoryBytes)} ` +
        '(ISOLATE_MEMORY_BYTES; a Cloudflare Worker has 128 MB). Lower MAX_SEQ_LEN, or serve a smaller model.',
    );
  }
  return { fileBytes, peakBytes: worst(tokens), maxBatchedTokens: tokens, callBytes: callActivationBytes(shape, tokens, Math.min(shape.context, tokens)) };
}

export const CLOUDFLARE_EMBEDDING_LIMITS: WorkerGgufLimits = { memoryBytes: WORKER_MEMORY_LIMIT_BYTES, sizeBytes: WORKER_SIZE_LIMIT_BYTES };
