/**
 * Server configuration: MindIE-style limits plus the batching limits of the scheduler.
 *
 * Precedence, lowest first: DEFAULT_SERVER_CONFIG < the config file < the environment
 * (HOST, PORT, MODEL_DIR, MODEL_DTYPE, MODEL_FILE, SERVED_MODEL_NAME, DATA_PARALLEL_SIZE,
 * INTRA_OP_NUM_THREADS, MODEL_THREAD,
 * ALLOWED_HOSTS, LOG_REQUESTS, API_KEY or VLLM_API_KEY, LORA_MODULES, MAX_LORAS, MAX_LORA_RANK,
 * VLLM_ALLOW_RUNTIME_LORA_UPDATING, ...). `resolveServerConfig` applies it; this
 * module is pure (no fs, no process.env), so the Node entry reads the file and passes
 * its parsed JSON and `process.env` in.
 */
import { z } from 'zod';
import { MODEL_DTYPES } from '../engine/loading/model-variants.js';
import type { SchedulerLimits } from '../engine/scheduler-limits.js';
import { describeIssue, formatPath, plainErrorMap } from '../common/zod-issues.js';
import { REASONING_PARSER_NAMES, type ReasoningParserName } from '../reasoning/index.js';
import { LOGPROBS_MODES } from '../sampling/params.js';
import { TOOL_CALL_PARSER_NAMES, type ToolCallParserName } from '../tools/parsers/index.js';
import { DEFAULT_TOKENIZATION_MS } from '../tokenizer/tokenizer-thread.js';
import { boundEnvName, REQUEST_BOUNDS_SHAPE } from './bound-settings.js';
import { kebabCase, setting, surfaceOf, valueFromText, type SettingSurface } from './setting-surface.js';

const int = (min: number, max = Number.MAX_SAFE_INTEGER) => {
  const requirement = max === Number.MAX_SAFE_INTEGER ? `must be an integer >= ${min}` : `must be an integer in [${min}, ${max}]`;
  return z.number({ error: requirement }).refine((v) => Number.isSafeInteger(v) && v >= min && v <= max, { error: requirement });
};
const nonEmpty = z.string({ error: 'must be a non-empty string' }).min(1, { error: 'must not be empty' });
/** A list of names, also written as one comma-separated string (as environment variables and Worker vars carry it). */
const nameList = (what: string) =>
  z.preprocess(
    (value) => (typeof value === 'string' ? value.split(',').map((item) => item.trim()).filter((item) => item !== '') : value),
    z.array(nonEmpty, { error: `must be a list of ${what} (or one comma-separated string)` }),
  );

const THREAD_COUNT = 'must be "auto" or an integer in [1, 256]';

const LORA_NAME = /^[^\s=,]+$/;
/** One "name=path" entry of loraModules. */
function loraModuleEntry(entry: string, ctx: z.RefinementCtx): { name: string; path: string } {
  const at = entry.indexOf('=');
  const name = at < 0 ? '' : entry.slice(0, at).trim();
  const path = at < 0 ? '' : entry.slice(at + 1).trim();
  if (!LORA_NAME.test(name) || path === '') ctx.addIssue({ code: 'custom', message: `entry "${entry}" must be name=path` });
  return { name, path };
}
const loraModuleObject = z.strictObject(
  { name: z.string().regex(LORA_NAME, { error: 'must be a name without spaces, "=" or ","' }), path: nonEmpty },
  { error: 'must be "name=path" or {"name", "path"}' },
);
const loraModulesSetting = z
  .union(
    [
      z.string().transform((text, ctx) =>
        text
          .split(',')
          .map((entry) => entry.trim())
          .filter((entry) => entry !== '')
          .map((entry) => loraModuleEntry(entry, ctx)),
      ),
      z.array(z.union([z.string().transform((entry, ctx) => loraModuleEntry(entry.trim(), ctx)), loraModuleObject])),
    ],
    { error: 'must be "name=path,..." or a list of "name=path" / {"name", "path"}' },
  )
  .refine((modules) => new Set(modules.map((m) => m.name)).size === modules.length, { error: 'names a LoRA adapter twice' });

/** The request bounds, each with its environment variable named after it (maxPromptChars → MAX_PROMPT_CHARS, the Worker's rule too). */
function withEnvNames<T extends Record<string, z.ZodType>>(shape: T): T {
  const out: Record<string, z.ZodType> = {};
  for (const [key, schema] of Object.entries(shape)) out[key] = setting(schema, { ...surfaceOf(schema)!, env: [boundEnvName(key)] });
  return out as T;
}

export const ServerConfigSchema = z.strictObject(
  {
    /** Address to listen on (MindIE ipAddress). */
    host: setting(nonEmpty.default('127.0.0.1'), { group: "The model and where it listens", help: "address to listen on", text: 'string', env: ["HOST"] }),
    /** TCP port; 0 lets the OS pick a free one. */
    port: setting(int(0, 65535).default(8080), { group: "The model and where it listens", help: "TCP port (0: any free port)", text: 'int', env: ["PORT"] }),
    /** Directory of the model (ONNX graph, tokenizer, config.json, generation_config.json). */
    modelDir: setting(nonEmpty.default('models/stories260k'), { group: "The model and where it listens", help: "the model: a folder in the Hugging Face ONNX layout or a .gguf file (also the MODEL argument)", text: 'string', env: ["MODEL_DIR"], flag: "model", valueName: "PATH" }),
    /**
     * Which weight variant of the model folder to load, by transformers.js's names:
     * fp32 → onnx/model.onnx, q4 → onnx/model_q4.onnx, ... (engine/loading/model-variants.ts).
     */
    dtype: setting(z.enum(MODEL_DTYPES, { error: `must be one of ${MODEL_DTYPES.map((d) => `"${d}"`).join(', ')}` }).optional(), { group: "The model and where it listens", help: "weight variant of the folder: fp32, fp16, q4, q4f16, int8, uint8, quantized, bnb4 (vLLM's auto, float32, float16, half too)", text: 'dtype', env: ["MODEL_DTYPE"], valueName: "DTYPE" }),
    /** Any .onnx file inside the model folder (e.g. "onnx/my-export.onnx"); wins over dtype. */
    modelFile: setting(nonEmpty.optional(), { group: "The model and where it listens", help: "any .onnx (or .gguf) file inside the model folder; wins over --dtype", text: 'string', env: ["MODEL_FILE"], valueName: "FILE" }),
    /**
     * vLLM's --runner: "generate" (a text-generation model), "pooling" (an embedding model,
     * served on /v1/embeddings), or "auto": pooling for a folder with sentence-transformers'
     * modules.json, or an encoder family (BERT, XLM-R, ...) whose config.json names no
     * *ForCausalLM / *ForConditionalGeneration / *LMHeadModel architecture; generate otherwise.
     */
    runner: setting(z.enum(['auto', 'generate', 'pooling'], { error: 'must be "auto", "generate" or "pooling"' }).default('auto'), { group: "The model and where it listens", help: "generate, pooling (an embedding model on /v1/embeddings) or auto (by the folder)", text: 'string', env: ["RUNNER"], valueName: "auto|generate|pooling" }),
    /**
     * vLLM's --pooler-config for an embedding model: {"pooling_type": "CLS" | "MEAN" | "LAST",
     * "normalize": true | false}, over what modules.json says (a JSON string in POOLER_CONFIG).
     */
    poolerConfig: setting(z
      .preprocess(
        (value) => {
          if (typeof value !== 'string') return value;
          try {
            return JSON.parse(value) as unknown;
          } catch {
            return value;
          }
        },
        z.strictObject(
          {
            pooling_type: z.enum(['CLS', 'MEAN', 'LAST', 'cls', 'mean', 'last'], { error: 'must be "CLS", "MEAN" or "LAST"' }).optional(),
            normalize: z.boolean({ error: 'must be true or false' }).optional(),
          },
          { error: 'must be a JSON object like {"pooling_type": "MEAN", "normalize": true}' },
        ),
      )
      .optional(), { group: "The model and where it listens", help: "an embedding model's pooling over modules.json: {\"pooling_type\": \"MEAN\", \"normalize\": true}", text: 'string', env: ["POOLER_CONFIG"], valueName: "JSON" }),
    /**
     * Decode sequences of different requests in one batch. Off: one request per model
     * call (its own n / beams still share it), for graphs whose outputs batching changes
     * (dynamic int8 quantisation computes its scales over the whole batch).
     */
    crossRequestBatching: setting(z.boolean({ error: 'must be true or false' }).default(true), { group: "Scheduling and batching", help: "sequences of different requests share a model call", text: 'bool' }),
    /** Name clients pass as `model`; defaults to the model directory's name. */
    servedModelName: setting(nonEmpty.optional(), { group: "The model and where it listens", help: "the model name clients use (default: the folder's name)", text: 'string', env: ["SERVED_MODEL_NAME"], valueName: "NAME" }),
    /**
     * Longest sequence (prompt + output) the server runs (vLLM's --max-model-len). Unset: the
     * model's context (config.json / text_config max_position_embeddings, lowered by
     * tokenizer_config's model_max_length), as vLLM derives max_model_len; never above it.
     */
    maxSeqLen: setting(int(2).optional(), { group: "Context and output limits", help: "longest prompt + output in tokens (default: the model's context)", text: 'int', env: ["MAX_SEQ_LEN"], flag: "max-model-len" }),
    /**
     * Bytes the KV cache may take at most (vLLM's --kv-cache-memory-bytes). At startup one
     * full-context sequence must fit (an unset maxSeqLen's context is lowered until it does;
     * a set one that does not is refused), and the sequences run together are capped so that
     * that many full-context rows fit.
     */
    kvCacheMemoryBytes: setting(int(1).default(8 * 1024 ** 3), { group: "Scheduling and batching", help: "bytes the KV cache may take", text: 'int', env: ["KV_CACHE_MEMORY_BYTES"], flag: "kv-cache-memory-bytes" }),
    /**
     * Keep prompts' KV cache and reuse it for later prompts that start with the same tokens
     * (a chat's earlier turns, a shared system prompt), as vLLM's --enable-prefix-caching
     * (on by default) and llama.cpp's cache_prompt. Kept prefixes use the KV budget the
     * running sequences leave, least recently used evicted first.
     */
    enablePrefixCaching: setting(z.boolean({ error: 'must be true or false' }).default(true), { group: "Scheduling and batching", help: "reuse the KV cache of earlier prompts' shared prefixes", text: 'bool', env: ["ENABLE_PREFIX_CACHING"], flag: "enable-prefix-caching", negation: "no-enable-prefix-caching" }),
    /**
     * Prefill a long prompt arriving while sequences decode in slices between their steps
     * (vLLM's --enable-chunked-prefill), so running streams keep their pace.
     */
    enableChunkedPrefill: setting(z.boolean({ error: 'must be true or false' }).default(true), { group: "Scheduling and batching", help: "prefill long prompts in slices between running sequences' steps", text: 'bool', env: ["ENABLE_CHUNKED_PREFILL"], flag: "enable-chunked-prefill", negation: "no-enable-chunked-prefill" }),
    /** Tokens per slice of a chunked prefill; 0 sizes each slice to about one decode step's time. */
    longPrefillTokenThreshold: setting(int(0).default(0), { group: "Scheduling and batching", help: "tokens per chunked-prefill slice (0: sized to about one decode step's time)", text: 'int', env: ["LONG_PREFILL_TOKEN_THRESHOLD"], flag: "long-prefill-token-threshold" }),
    /**
     * Report usage.prompt_tokens_details.cached_tokens when a request reused cached prompt
     * tokens (vLLM's --enable-prompt-tokens-details, off by default).
     */
    enablePromptTokensDetails: setting(z.boolean({ error: 'must be true or false' }).default(false), { group: "Scheduling and batching", help: "usage.prompt_tokens_details.cached_tokens on /v1 responses", text: 'bool', env: ["ENABLE_PROMPT_TOKENS_DETAILS"], flag: "enable-prompt-tokens-details" }),
    /** Longest prompt in tokens. */
    maxInputTokenLen: setting(int(1).default(511), { group: "Context and output limits", help: "longest /generate prompt, in tokens (MindIE)", text: 'int' }),
    /** Most tokens one request may generate; /generate's max_tokens default. */
    maxIterTimes: setting(int(1).default(512), { group: "Context and output limits", help: "most tokens one /generate request may produce (MindIE)", text: 'int' }),
    /** /generate streaming: each event carries the full text so far instead of the delta. */
    fullTextEnabled: setting(z.boolean({ error: 'must be true or false' }).default(false), { group: "Context and output limits", help: "/generate streaming sends the full text so far in each event (MindIE)", text: 'bool' }),
    /** Sequences decoded together in one batch. */
    maxRunningSequences: setting(int(1).default(64), { group: "Scheduling and batching", help: "sequences decoded together in one engine step", text: 'int', flag: "max-num-seqs" }),
    /** Tokens (prefill + decode) one engine step may process. */
    maxBatchedTokens: setting(int(1).default(8192), { group: "Scheduling and batching", help: "tokens (prefill + decode) one engine step may process", text: 'int', flag: "max-num-batched-tokens" }),
    /** Requests queued beyond the running ones before new ones are refused with 503. */
    maxWaitingRequests: setting(int(0).default(256), { group: "Scheduling and batching", help: "queued requests before new ones get a 503", text: 'int' }),
    /** A request still waiting after this long is refused with 503. */
    waitingDeadlineMs: setting(int(1).default(30000), { group: "Scheduling and batching", help: "a request still queued after this long gets a 503", text: 'int' }),
    /** Speculative decoding by prompt lookup for: structured-output requests, all, or none. */
    speculativeDecoding: setting(z.enum(['off', 'guided', 'all'], { error: 'must be "off", "guided" or "all"' }).default('guided'), { group: "Speculative decoding", help: "prompt-lookup speculation for: off, guided (structured output), all", text: 'string', valueName: "off|guided|all" }),
    /** Guessed tokens per sequence and step when speculating. */
    numSpeculativeTokens: setting(int(1, 64).default(4), { group: "Speculative decoding", help: "guessed tokens per sequence and step (1-64)", text: 'int', flag: "num-speculative-tokens" }),
    /** Speculate only while at most this many sequences run. */
    speculativeMaxSequences: setting(int(1).default(2), { group: "Speculative decoding", help: "speculate only while at most this many sequences run", text: 'int' }),
    /** Engine processes behind the port (Node only), each with its own model copy and batch. */
    dataParallelSize: setting(int(1, 64).default(1), { group: "Processes and threads", help: "engine processes behind the port (1-64), each with its own model copy", text: 'int', env: ["DATA_PARALLEL_SIZE"], flag: "data-parallel-size", aliases: ["-dp"] }),
    /**
     * onnxruntime's intra-op threads per model call (Node). "auto": one for models under
     * 64 MiB (a small model's step is mostly the runtime's fixed cost, which threads slow
     * down), else the cores shared by the dataParallelSize processes, at most 4.
     */
    intraOpNumThreads: setting(z
      .custom<'auto' | number>((v) => v === 'auto' || (typeof v === 'number' && Number.isSafeInteger(v) && v >= 1 && v <= 256), { error: THREAD_COUNT })
      .default('auto'), { group: "Processes and threads", help: "onnxruntime's threads per model call: auto or 1-256", text: 'threads', env: ["INTRA_OP_NUM_THREADS"] }),
    /**
     * onnxruntime's intra-op threads spin-wait between kernels (Node, more than one thread).
     * Off by default: on cores other work shares, spinning made steps 1.2–1.6× slower than
     * one thread. On a host whose cores the server has to itself, a one-request decode step's
     * ~100 thread hand-offs stop waiting on a futex wake (llama.cpp spins likewise).
     */
    intraOpSpinning: setting(z.boolean({ error: 'must be true or false' }).default(true), { group: "Processes and threads", help: "intra-op threads spin between the kernels of a model call (off for several engines on shared cores)", text: 'bool', env: ["INTRA_OP_SPINNING"] }),
    /**
     * Which thread makes the model calls (Node, native backend): "main", "worker" (a worker
     * thread owns the session and the KV cache, so HTTP and streaming go on during a step),
     * or "auto": worker for models of 64 MiB and more, whose steps are long.
     */
    modelThread: setting(z.enum(['auto', 'main', 'worker'], { error: 'must be "auto", "main" or "worker"' }).default('auto'), { group: "Processes and threads", help: "which thread makes the model calls: auto, main, worker", text: 'string', env: ["MODEL_THREAD"], valueName: "auto|main|worker" }),

    // Serving in public (README "Running it in public").
    /**
     * vLLM's --api-key: `Authorization: Bearer <key>` required on /v1/*, /generate, /tokenize
     * and /detokenize. Several keys (a list) ease rotation. Env: API_KEY, else VLLM_API_KEY.
     */
    apiKey: setting(z.union([nonEmpty, z.array(nonEmpty, { error: 'must be a string or a list of strings' }).min(1)]).optional(), { group: "Authentication, hosts, logs, connections", help: "Authorization: Bearer key required on /v1/*, /generate, /tokenize, /detokenize (several: rotation)", text: 'string', env: ["API_KEY", "VLLM_API_KEY"], flag: "api-key", many: true, secret: true, valueName: "KEY" }),
    /** POST bodies must say Content-Type: application/json (or +json); false parses any body as JSON. */
    requireJsonContentType: setting(z.boolean({ error: 'must be true or false' }).default(true), { group: "Authentication, hosts, logs, connections", help: "POST bodies must be Content-Type: application/json (else 415)", text: 'bool' }),
    /**
     * Host header names accepted (DNS-rebinding guard): "name", ".domain" (it and its
     * subdomains) or "*". IP literals always pass. null: loopback names only when listening
     * on a loopback address, any name otherwise. Env: ALLOWED_HOSTS (comma-separated).
     */
    allowedHosts: setting(z.array(nonEmpty, { error: 'must be a list of host names' }).nullable().default(null), { group: "Authentication, hosts, logs, connections", help: "Host names accepted: name, .domain, * (default: loopback names on a loopback address)", text: 'list', env: ["ALLOWED_HOSTS"], many: true }),
    /** One JSON line per request on stdout. */
    logRequests: setting(z.boolean({ error: 'must be true or false' }).default(true), { group: "Authentication, hosts, logs, connections", help: "one JSON line per request on stdout", text: 'bool', env: ["LOG_REQUESTS"], flag: "enable-log-requests", negation: "disable-log-requests" }),
    /** Put the prompt text in the request log line (off: prompts are users' data). */
    logPrompts: setting(z.boolean({ error: 'must be true or false' }).default(false), { group: "Authentication, hosts, logs, connections", help: "put the prompt text in the request log line", text: 'bool' }),
    /** A connection must send its request headers within this long (Node only). */
    headersTimeoutMs: setting(int(1).default(10_000), { group: "Authentication, hosts, logs, connections", help: "a connection must send its request headers within this long (ms)", text: 'int' }),
    /** A connection must send its whole request, headers and body, within this long (Node only). */
    requestTimeoutMs: setting(int(1).default(30_000), { group: "Authentication, hosts, logs, connections", help: "a connection must send its whole request within this long (ms)", text: 'int' }),
    /** Open connections per process; past it the oldest idle one is closed, a new one dropped only when all are busy (Node only). */
    maxConnections: setting(int(1).default(1024), { group: "Authentication, hosts, logs, connections", help: "open connections per process", text: 'int' }),
    /**
     * Requests one connection may have waiting (received, not yet answered: HTTP/1.1
     * pipelining); past it the connection is closed (Node only).
     */
    maxPipelinedRequests: setting(int(1).default(16), { group: "Authentication, hosts, logs, connections", help: "requests one connection may have waiting unanswered (pipelining)", text: 'int' }),
    /**
     * Bytes of request bodies the server takes in at once, over all connections: each request
     * reserves its Content-Length (a chunked one maxRequestBytes) before its body is read; one
     * that does not fit gets a 503 with Retry-After (Node only; at least maxRequestBytes).
     */
    maxRequestBytesInFlight: setting(int(1).default(256 * 1024 * 1024), { group: "Authentication, hosts, logs, connections", help: "request-body bytes taken in at once over all connections", text: 'int' }),
    /**
     * Output one stream may leave unread by its client (bytes, as held in memory); past it the
     * generation is stopped and the stream ends with a 408 error event (engine/unread-output.ts).
     */
    maxStreamUnreadBytes: setting(int(1).default(4 * 1024 * 1024), { group: "Authentication, hosts, logs, connections", help: "output one stream may leave unread by its client before it is ended (bytes)", text: 'int' }),
    /** Output all streams together may leave unread; past it the stream holding most is ended the same way. */
    maxUnreadBytesTotal: setting(int(1).default(64 * 1024 * 1024), { group: "Authentication, hosts, logs, connections", help: "output all streams together may leave unread; past it the one holding most is ended (bytes)", text: 'int' }),
    /** A stream whose socket takes nothing for this long is ended with a 408 error event (Node only). */
    streamWriteTimeoutMs: setting(int(1).default(30_000), { group: "Authentication, hosts, logs, connections", help: "a stream whose client reads nothing for this long is ended (ms)", text: 'int' }),
    /**
     * Structured-output compiles that may wait their turn (they run one at a time, paced to
     * half the thread: guided/compile-gate.ts); past it a 503 with Retry-After.
     */
    maxGuidedCompileQueue: setting(int(1).default(64), { group: "Authentication, hosts, logs, connections", help: "structured-output compiles that may wait their turn; past it a 503", text: 'int' }),
    /** Of those, how many one client (its connection's address) may have; past it a 429 with Retry-After. */
    maxGuidedCompileQueuePerClient: setting(int(1).default(8), { group: "Authentication, hosts, logs, connections", help: "structured-output compiles one client may have waiting; past it a 429", text: 'int' }),
    /** A structured-output compile still waiting after this long is refused (503). */
    guidedCompileDeadlineMs: setting(int(1).default(10_000), { group: "Authentication, hosts, logs, connections", help: "a structured-output compile still waiting after this long gets a 503 (ms)", text: 'int' }),
    /**
     * Threads rendering chat templates (Node only): a long conversation or a request's own
     * template renders on one, so one slow rendering does not hold every other (issue 41, family 4).
     */
    guidedDecodingThreads: setting(int(0, 16).default(2), { group: "Authentication, hosts, logs, connections", help: "threads compiling and matching structured-output grammars (Node; 0: on the event loop)", text: 'int' }),
    templateThreads: setting(int(1, 16).default(2), { group: "Authentication, hosts, logs, connections", help: "threads rendering long chat templates (Node)", text: 'int' }),
    /**
     * Jobs that may wait for a worker thread (the template, tokenizer and media threads, each
     * its own queue); past it a 503 with Retry-After (Node only).
     */
    maxThreadQueue: setting(int(1).default(64), { group: "Authentication, hosts, logs, connections", help: "jobs that may wait for one worker thread pool (template, tokenizer, media)", text: 'int' }),
    /** Of those, jobs one client (its address) may have waiting; past it a 429 with Retry-After (Node only). */
    maxThreadQueuePerClient: setting(int(1).default(16), { group: "Authentication, hosts, logs, connections", help: "jobs one client may have waiting for one worker thread pool", text: 'int' }),
    /**
     * One text's tokenizing on Node's tokenizer thread (texts with long unbroken runs go there),
     * counted from when it was queued: past it a 503 if it never started, a 400 if it ran.
     */
    maxTokenizationMs: setting(int(1).default(DEFAULT_TOKENIZATION_MS), { group: "Authentication, hosts, logs, connections", help: "one text's tokenizing on the tokenizer thread, counted from when it was queued (ms, Node)", text: 'int' }),
    /** How long a keep-alive connection may sit idle between requests (Node only; uvicorn's --timeout-keep-alive under vLLM). */
    keepAliveTimeoutMs: setting(int(1).default(5000), { group: "Authentication, hosts, logs, connections", help: "how long a keep-alive connection may sit idle (ms)", text: 'int' }),
    /** On SIGTERM/SIGINT, how long running requests get before they are cut (Node only). */
    shutdownGraceMs: setting(int(0).default(5000), { group: "Authentication, hosts, logs, connections", help: "on SIGTERM/SIGINT, how long running requests get before they are cut (ms)", text: 'int' }),
    /**
     * How "auto" tool choice reads calls out of the model's text (vLLM's --tool-call-parser):
     * the format the served model writes. Unset: "auto" is refused with a 400.
     */
    toolCallParser: setting(z
      .enum(TOOL_CALL_PARSER_NAMES as [string, ...string[]], { error: `must be one of ${TOOL_CALL_PARSER_NAMES.map((n) => `"${n}"`).join(', ')}` })
      .optional(), { group: "Chat templates and tool calling", help: "how tool_choice \"auto\" reads calls from the model's text", text: 'string', env: ["TOOL_CALL_PARSER"], flag: "tool-call-parser", valueName: "PARSER" }),
    /**
     * How /v1/chat/completions splits a reasoning model's output into `reasoning` and
     * `content` (vLLM's --reasoning-parser): "deepseek_r1", "deepseek_v3" or "qwen3". Unset:
     * the output is all content.
     */
    reasoningParser: setting(z
      .enum(REASONING_PARSER_NAMES as [string, ...string[]], { error: `must be one of ${REASONING_PARSER_NAMES.map((n) => `"${n}"`).join(', ')}` })
      .optional(), { group: "Chat templates and tool calling", help: "how a reasoning model's output splits into reasoning and content", text: 'string', env: ["REASONING_PARSER"], flag: "reasoning-parser", valueName: "PARSER" }),
    /**
     * Which distribution /v1 logprobs report (vLLM's --logprobs-mode): "raw_logprobs" (the
     * model's, before logit_bias, penalties, temperature and top-k/top-p/min-p; vLLM's
     * default), "raw_logits", "processed_logprobs" (the one the token was drawn from, as
     * vLLM 0.6 reported) or "processed_logits".
     */
    logprobsMode: setting(z.enum(LOGPROBS_MODES, { error: `must be one of ${LOGPROBS_MODES.map((m) => `"${m}"`).join(', ')}` }).default('raw_logprobs'), { group: "Chat templates and tool calling", help: "which distribution /v1 logprobs report: raw_logprobs, raw_logits, processed_logprobs, processed_logits", text: 'string', env: ["LOGPROBS_MODE"], flag: "logprobs-mode", valueName: "MODE" }),
    /**
     * vLLM's --chat-template: the template chat requests are rendered with instead of the
     * model's (tokenizer_config.json / chat_template.jinja). A file path or the template itself
     * (the Node entry reads a path that exists; in a Worker it is the template's text).
     */
    /**
     * Render a chat template sent in a request (`chat_template`, or `chat_template` in
     * chat_template_kwargs) instead of refusing it (vLLM's --trust-request-chat-template). A
     * request's template is code the server runs: off by default, as in vLLM.
     */
    trustRequestChatTemplate: setting(z.boolean({ error: 'must be true or false' }).default(false), { group: "Chat templates and tool calling", help: "render a chat template sent in a request (else 400, as vLLM)", text: 'bool', env: ["TRUST_REQUEST_CHAT_TEMPLATE"], flag: "trust-request-chat-template" }),
    chatTemplate: setting(nonEmpty.optional(), { group: "Chat templates and tool calling", help: "the chat template to use instead of the model's: a .jinja file or the template text", text: 'string', env: ["CHAT_TEMPLATE"], flag: "chat-template", valueName: "FILE|TEMPLATE" }),
    /** CORS: origins allowed to call the API from a browser ("*": any, as vLLM's default). */
    corsAllowedOrigins: setting(nameList('origins').default(['*']), { group: "CORS", help: "origins that may call the API from a browser", text: 'list', env: ["CORS_ALLOWED_ORIGINS"], flag: "allowed-origins", many: true }),
    /** CORS: methods a cross-origin request may use. */
    corsAllowedMethods: setting(nameList('methods').default(['*']), { group: "CORS", help: "methods a cross-origin request may use", text: 'list', flag: "allowed-methods", many: true }),
    /** CORS: request headers a cross-origin request may send. */
    corsAllowedHeaders: setting(nameList('header names').default(['*']), { group: "CORS", help: "request headers a cross-origin request may send", text: 'list', flag: "allowed-headers", many: true }),
    /** CORS: whether browsers may send credentials (cookies, HTTP auth) across origins. */
    corsAllowCredentials: setting(z.boolean({ error: 'must be true or false' }).default(false), { group: "CORS", help: "browsers may send credentials across origins", text: 'bool', flag: "allow-credentials" }),
    /** What one request may make the server do (request-bounds.ts). */
    ...withEnvNames(REQUEST_BOUNDS_SHAPE),
    /**
     * LoRA adapters served by name (vLLM's --lora-modules): "name=path,..." (LORA_MODULES), or
     * a list of "name=path" strings or {"name", "path"} objects. Each is a PEFT folder.
     */
    loraModules: setting(loraModulesSetting.default([]), { group: "LoRA adapters", help: "adapters loaded at startup: name=path (several, or comma-separated)", text: 'list', env: ["LORA_MODULES"], flag: "lora-modules", many: true, valueName: "NAME=PATH" }),
    /** Adapters one model call can mix (vLLM's max_loras); more wait for a free slot. */
    maxLoras: setting(int(1, 64).default(4), { group: "LoRA adapters", help: "adapters one model call can mix (1-64)", text: 'int', env: ["MAX_LORAS"], flag: "max-loras" }),
    /**
     * Adapters held in memory at once (vLLM's max_cpu_loras), at least maxLoras: bounds what
     * run-time loads can add. vLLM evicts from a cache of this size; here a load past it is refused.
     */
    maxCpuLoras: setting(int(1, 1024).default(16), { group: "LoRA adapters", help: "the most adapters the server holds", text: 'int', env: ["MAX_CPU_LORAS"], flag: "max-cpu-loras" }),
    /** Largest adapter rank accepted (vLLM's max_lora_rank). */
    maxLoraRank: setting(int(1, 1024).default(16), { group: "LoRA adapters", help: "largest adapter rank accepted", text: 'int', env: ["MAX_LORA_RANK"], flag: "max-lora-rank" }),
    /** POST /v1/load_lora_adapter and /v1/unload_lora_adapter (vLLM's VLLM_ALLOW_RUNTIME_LORA_UPDATING). */
    allowRuntimeLoraUpdating: setting(z.boolean({ error: 'must be true or false' }).default(false), { group: "LoRA adapters", help: "enable POST /v1/load_lora_adapter and /v1/unload_lora_adapter", text: 'bool', env: ["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] }),
    /** The folder run-time loads are confined to (LORA_ROOT): lora_path resolves inside it, symlinks included. Required with allowRuntimeLoraUpdating under Node. */
    loraRoot: setting(z.string({ error: 'must be a folder path' }).trim().min(1, { error: 'must be a folder path' }).nullable().default(null), { group: "LoRA adapters", help: "the folder run-time adapter loads are confined to", text: 'string', env: ["LORA_ROOT"], valueName: "PATH" }),
  },
  { error: 'must be a JSON object' },
);

export type ServerConfig = Omit<z.output<typeof ServerConfigSchema>, 'servedModelName' | 'toolCallParser' | 'reasoningParser'> & {
  servedModelName: string;
  toolCallParser?: ToolCallParserName;
  reasoningParser?: ReasoningParserName;
};

/** The engine's scheduler settings from a server configuration. */
export function schedulerLimitsOf(config: ServerConfig): SchedulerLimits {
  return {
    maxRunningSequences: config.maxRunningSequences,
    maxBatchedTokens: config.maxBatchedTokens,
    maxExtraSequenceSlotPercent: config.maxExtraSequenceSlotPercent,
    maxWaitingRequests: config.maxWaitingRequests,
    waitingDeadlineMs: config.waitingDeadlineMs,
    speculativeDecoding: config.speculativeDecoding,
    numSpeculativeTokens: config.numSpeculativeTokens,
    speculativeMaxSequences: config.speculativeMaxSequences,
    crossRequestBatching: config.crossRequestBatching,
    maxSeqLen: config.maxSeqLen ?? null,
    kvCacheMemoryBytes: config.kvCacheMemoryBytes,
    enablePrefixCaching: config.enablePrefixCaching,
    enableChunkedPrefill: config.enableChunkedPrefill,
    longPrefillTokenThreshold: config.longPrefillTokenThreshold,
    maxStreamUnreadBytes: config.maxStreamUnreadBytes,
    maxUnreadBytesTotal: config.maxUnreadBytesTotal,
  };
}

/** Last path segment, for either separator, ignoring trailing separators. */
function baseName(dir: string): string {
  const parts = dir.split(/[\\/]+/).filter((p) => p !== '');
  return parts[parts.length - 1] ?? dir;
}

/** Validates a raw configuration object (e.g. a parsed config file merged with the environment). */
export function parseServerConfig(raw: unknown): ServerConfig {
  const result = ServerConfigSchema.safeParse(raw ?? {}, { reportInput: true, error: plainErrorMap });
  if (!result.success) {
    const problems = result.error.issues.flatMap((issue) =>
      issue.code === 'unrecognized_keys'
        ? issue.keys.map((key) => `${formatPath([...issue.path, key])} is not a known setting`)
        : [describeIssue(issue, 'the configuration').message],
    );
    throw new Error(`Invalid server configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  }
  const config = result.data;
  const conflicts: string[] = [];
  if (config.maxCpuLoras < config.maxLoras) {
    conflicts.push(`maxCpuLoras (${config.maxCpuLoras}) must be at least maxLoras (${config.maxLoras}), as in vLLM`);
  }
  if (config.loraModules.length > config.maxCpuLoras) {
    conflicts.push(`loraModules names ${config.loraModules.length} adapters, more than maxCpuLoras (${config.maxCpuLoras}), the most the server holds`);
  }
  if (config.corsAllowCredentials && config.corsAllowedOrigins.includes('*')) {
    conflicts.push(
      'corsAllowCredentials with corsAllowedOrigins "*" would let any page (even Origin: null) make credentialed requests: list the allowed origins',
    );
  }
  if (conflicts.length > 0) throw new Error(`Invalid server configuration:\n${conflicts.map((p) => `  - ${p}`).join('\n')}`);
  return {
    ...config,
    servedModelName: config.servedModelName ?? baseName(config.modelDir),
    toolCallParser: config.toolCallParser as ToolCallParserName | undefined,
    reasoningParser: config.reasoningParser as ReasoningParserName | undefined,
  };
}

export const DEFAULT_SERVER_CONFIG: ServerConfig = parseServerConfig({});

export type SettingKey = keyof typeof ServerConfigSchema.shape;

/** Every setting, in the schema's order (the order of --help and docs/configuration.md). */
export const SETTING_KEYS = Object.keys(ServerConfigSchema.shape) as SettingKey[];

/** How a setting is reached from a flag and the environment (its schema's metadata; flag defaulted to its kebab-case key). */
export function settingSurface(key: SettingKey): SettingSurface & { flag: string; env: readonly string[] } {
  const surface = surfaceOf(ServerConfigSchema.shape[key] as z.ZodType);
  if (surface === undefined) throw new Error(`setting ${key} has no surface (wrap its schema in setting())`);
  return { ...surface, flag: surface.flag ?? kebabCase(key), env: surface.env ?? [] };
}

/** Where a setting's value came from, as the startup report names it. */
export type SettingOrigin = { kind: 'flag'; name: string } | { kind: 'env'; name: string } | { kind: 'file'; path: string };

export function describeOrigin(origin: SettingOrigin): string {
  return origin.kind === 'flag' ? origin.name : origin.kind === 'env' ? `env ${origin.name}` : `config file ${origin.path}`;
}

/** vLLM's key variable and ours; the first set wins. */
const API_KEY_VARIABLES = ['API_KEY', 'VLLM_API_KEY'] as const;

/** The API key from API_KEY or VLLM_API_KEY (empty counts as unset). */
export function apiKeyFromEnv(env: Record<string, unknown>, names: readonly string[] = API_KEY_VARIABLES): string | undefined {
  for (const name of names) {
    const value = env[name];
    if (typeof value === 'string' && value.trim() !== '') return value.trim();
  }
  return undefined;
}

/** A comma-separated list variable as a list (blank entries dropped). */
export function listFromEnv(value: string): string[] {
  return value
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
}

/**
 * The settings the environment sets, with the variable each came from. Empty variables
 * count as unset; a value that does not convert (PORT=eighty) is passed through as text so
 * validation reports it.
 */
export function settingsFromEnv(env: Record<string, string | undefined>): { values: Record<string, unknown>; origins: Partial<Record<SettingKey, SettingOrigin>> } {
  const values: Record<string, unknown> = {};
  const origins: Partial<Record<SettingKey, SettingOrigin>> = {};
  for (const key of SETTING_KEYS) {
    const surface = settingSurface(key);
    const name = surface.env.find((variable) => env[variable] !== undefined && env[variable]!.trim() !== '');
    if (name === undefined) continue;
    values[key] = valueFromText(surface.text, env[name]!);
    origins[key] = { kind: 'env', name };
  }
  return { values, origins };
}

/** The settings the environment overrides (see settingsFromEnv). */
export function configFromEnv(env: Record<string, string | undefined>): Partial<Record<string, unknown>> {
  return settingsFromEnv(env).values;
}

export interface SettingSources {
  /** The parsed config file (a JSON object), and its path for the report. */
  file?: unknown;
  filePath?: string;
  env?: Record<string, string | undefined>;
  /** Settings given as command-line flags (already converted), with the flag each came from. */
  flags?: Record<string, unknown>;
  flagNames?: Partial<Record<string, string>>;
}

/** Applies the precedence defaults < file < environment < flags, validates, and says where each given setting came from. */
export function resolveServerSettings(sources: SettingSources): { config: ServerConfig; origins: Partial<Record<SettingKey, SettingOrigin>> } {
  const file = sources.file ?? {};
  if (typeof file !== 'object' || file === null || Array.isArray(file)) {
    throw new Error('Invalid server configuration:\n  - the configuration file must contain a JSON object');
  }
  const origins: Partial<Record<SettingKey, SettingOrigin>> = {};
  for (const key of Object.keys(file)) origins[key as SettingKey] = { kind: 'file', path: sources.filePath ?? 'config file' };
  const fromEnv = settingsFromEnv(sources.env ?? {});
  Object.assign(origins, fromEnv.origins);
  const flags = sources.flags ?? {};
  for (const key of Object.keys(flags)) origins[key as SettingKey] = { kind: 'flag', name: sources.flagNames?.[key] ?? `--${settingSurface(key as SettingKey).flag}` };
  const raw: Record<string, unknown> = { ...file, ...fromEnv.values, ...flags };
  // "auto" and other vLLM words that mean "unset" arrive as undefined: the setting keeps its default.
  for (const key of Object.keys(raw)) if (raw[key] === undefined) delete raw[key];
  return { config: parseServerConfig(raw), origins };
}

/** Applies the precedence defaults < file < environment, then validates. */
export function resolveServerConfig(sources: { file?: unknown; env?: Record<string, string | undefined> }): ServerConfig {
  return resolveServerSettings(sources).config;
}

/** Adapters are on when some are configured or may be loaded at run time (vLLM's --enable-lora). */
export function loraEnabled(config: ServerConfig): boolean {
  return config.loraModules.length > 0 || config.allowRuntimeLoraUpdating;
}
