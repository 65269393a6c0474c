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
import { TOOL_CALL_PARSER_NAMES, type ToolCallParserName } from '../tools/parsers/index.js';
import { boundEnvName, REQUEST_BOUND_KEYS, REQUEST_BOUNDS_SHAPE } from './bound-settings.js';

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

export const ServerConfigSchema = z.strictObject(
  {
    /** Address to listen on (MindIE ipAddress). */
    host: nonEmpty.default('127.0.0.1'),
    /** TCP port; 0 lets the OS pick a free one. */
    port: int(0, 65535).default(8080),
    /** Directory of the model (ONNX graph, tokenizer, config.json, generation_config.json). */
    modelDir: nonEmpty.default('models/stories260k'),
    /**
     * Which weight variant of the model folder to load, by transformers.js's names:
     * fp32 → onnx/model.onnx, q4 → onnx/model_q4.onnx, ... (engine/loading/model-variants.ts).
     */
    dtype: z.enum(MODEL_DTYPES, { error: `must be one of ${MODEL_DTYPES.map((d) => `"${d}"`).join(', ')}` }).optional(),
    /** Any .onnx file inside the model folder (e.g. "onnx/my-export.onnx"); wins over dtype. */
    modelFile: nonEmpty.optional(),
    /**
     * vLLM's --runner: "generate" (a text-generation model), "pooling" (an embedding model,
     * served on /v1/embeddings), or "auto": pooling for a folder with sentence-transformers'
     * modules.json, or an encoder family (BERT, XLM-R, ...) whose config.json names no
     * *ForCausalLM / *ForConditionalGeneration / *LMHeadModel architecture; generate otherwise.
     */
    runner: z.enum(['auto', 'generate', 'pooling'], { error: 'must be "auto", "generate" or "pooling"' }).default('auto'),
    /**
     * vLLM's --pooler-config for an embedding model: {"pooling_type": "CLS" | "MEAN" | "LAST",
     * "normalize": true | false}, over what modules.json says (a JSON string in POOLER_CONFIG).
     */
    poolerConfig: z
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
      .optional(),
    /**
     * Decode sequences of different requests in one batch. Off: one request per model
     * call (its own n / beams still share it), for graphs whose outputs batching changes
     * (dynamic int8 quantisation computes its scales over the whole batch).
     */
    crossRequestBatching: z.boolean({ error: 'must be true or false' }).default(true),
    /** Name clients pass as `model`; defaults to the model directory's name. */
    servedModelName: nonEmpty.optional(),
    /**
     * Longest sequence (prompt + output) the server runs (vLLM's --max-model-len). Unset: the
     * model's context (config.json / text_config max_position_embeddings, lowered by
     * tokenizer_config's model_max_length), as vLLM derives max_model_len; never above it.
     */
    maxSeqLen: int(2).optional(),
    /**
     * Bytes the KV cache may take at most (vLLM's --kv-cache-memory-bytes). At startup one
     * full-context sequence must fit (an unset maxSeqLen's context is lowered until it does;
     * a set one that does not is refused), and the sequences run together are capped so that
     * that many full-context rows fit.
     */
    kvCacheMemoryBytes: int(1).default(8 * 1024 ** 3),
    /** Longest prompt in tokens. */
    maxInputTokenLen: int(1).default(511),
    /** Most tokens one request may generate; /generate's max_tokens default. */
    maxIterTimes: int(1).default(512),
    /** /generate streaming: each event carries the full text so far instead of the delta. */
    fullTextEnabled: z.boolean({ error: 'must be true or false' }).default(false),
    /** Sequences decoded together in one batch. */
    maxRunningSequences: int(1).default(64),
    /** Tokens (prefill + decode) one engine step may process. */
    maxBatchedTokens: int(1).default(8192),
    /** Requests queued beyond the running ones before new ones are refused with 503. */
    maxWaitingRequests: int(0).default(256),
    /** A request still waiting after this long is refused with 503. */
    waitingDeadlineMs: int(1).default(30000),
    /** Speculative decoding by prompt lookup for: structured-output requests, all, or none. */
    speculativeDecoding: z.enum(['off', 'guided', 'all'], { error: 'must be "off", "guided" or "all"' }).default('guided'),
    /** Guessed tokens per sequence and step when speculating. */
    numSpeculativeTokens: int(1, 64).default(4),
    /** Speculate only while at most this many sequences run. */
    speculativeMaxSequences: int(1).default(2),
    /** Engine processes behind the port (Node only), each with its own model copy and batch. */
    dataParallelSize: int(1, 64).default(1),
    /**
     * onnxruntime's intra-op threads per model call (Node). "auto": one for models under
     * 64 MiB (a small model's step is mostly the runtime's fixed cost, which threads slow
     * down), else the cores shared by the dataParallelSize processes, at most 4.
     */
    intraOpNumThreads: z
      .custom<'auto' | number>((v) => v === 'auto' || (typeof v === 'number' && Number.isSafeInteger(v) && v >= 1 && v <= 256), { error: THREAD_COUNT })
      .default('auto'),
    /**
     * Which thread makes the model calls (Node, native backend): "main", "worker" (a worker
     * thread owns the session and the KV cache, so HTTP and streaming go on during a step),
     * or "auto": worker for models of 64 MiB and more, whose steps are long.
     */
    modelThread: z.enum(['auto', 'main', 'worker'], { error: 'must be "auto", "main" or "worker"' }).default('auto'),

    // Serving in public (README "Running it in public").
    /**
     * vLLM's --api-key: `Authorization: Bearer <key>` required on /v1/*, /generate, /tokenize
     * and /detokenize. Several keys (a list) ease rotation. Env: API_KEY, else VLLM_API_KEY.
     */
    apiKey: z.union([nonEmpty, z.array(nonEmpty, { error: 'must be a string or a list of strings' }).min(1)]).optional(),
    /** POST bodies must say Content-Type: application/json (or +json); false parses any body as JSON. */
    requireJsonContentType: z.boolean({ error: 'must be true or false' }).default(true),
    /**
     * Host header names accepted (DNS-rebinding guard): "name", ".domain" (it and its
     * subdomains) or "*". IP literals always pass. null: loopback names only when listening
     * on a loopback address, any name otherwise. Env: ALLOWED_HOSTS (comma-separated).
     */
    allowedHosts: z.array(nonEmpty, { error: 'must be a list of host names' }).nullable().default(null),
    /** One JSON line per request on stdout. */
    logRequests: z.boolean({ error: 'must be true or false' }).default(true),
    /** Put the prompt text in the request log line (off: prompts are users' data). */
    logPrompts: z.boolean({ error: 'must be true or false' }).default(false),
    /** A connection must send its request headers within this long (Node only). */
    headersTimeoutMs: int(1).default(10_000),
    /** A connection must send its whole request, headers and body, within this long (Node only). */
    requestTimeoutMs: int(1).default(30_000),
    /** Open connections per process; past it the oldest idle one is closed, a new one dropped only when all are busy (Node only). */
    maxConnections: int(1).default(1024),
    /** How long a keep-alive connection may sit idle between requests (Node only; uvicorn's --timeout-keep-alive under vLLM). */
    keepAliveTimeoutMs: int(1).default(5000),
    /** On SIGTERM/SIGINT, how long running requests get before they are cut (Node only). */
    shutdownGraceMs: int(0).default(5000),
    /**
     * How "auto" tool choice reads calls out of the model's text (vLLM's --tool-call-parser):
     * the format the served model writes. Unset: "auto" is refused with a 400.
     */
    toolCallParser: z
      .enum(TOOL_CALL_PARSER_NAMES as [string, ...string[]], { error: `must be one of ${TOOL_CALL_PARSER_NAMES.map((n) => `"${n}"`).join(', ')}` })
      .optional(),
    /** CORS: origins allowed to call the API from a browser ("*": any, as vLLM's default). */
    corsAllowedOrigins: nameList('origins').default(['*']),
    /** CORS: methods a cross-origin request may use. */
    corsAllowedMethods: nameList('methods').default(['*']),
    /** CORS: request headers a cross-origin request may send. */
    corsAllowedHeaders: nameList('header names').default(['*']),
    /** CORS: whether browsers may send credentials (cookies, HTTP auth) across origins. */
    corsAllowCredentials: z.boolean({ error: 'must be true or false' }).default(false),
    /** What one request may make the server do (request-bounds.ts). */
    ...REQUEST_BOUNDS_SHAPE,
    /**
     * LoRA adapters served by name (vLLM's --lora-modules): "name=path,..." (LORA_MODULES), or
     * a list of "name=path" strings or {"name", "path"} objects. Each is a PEFT folder.
     */
    loraModules: loraModulesSetting.default([]),
    /** Adapters one model call can mix (vLLM's max_loras); more wait for a free slot. */
    maxLoras: int(1, 64).default(4),
    /**
     * Adapters held in memory at once (vLLM's max_cpu_loras), at least maxLoras: bounds what
     * run-time loads can add. vLLM evicts from a cache of this size; here a load past it is refused.
     */
    maxCpuLoras: int(1, 1024).default(16),
    /** Largest adapter rank accepted (vLLM's max_lora_rank). */
    maxLoraRank: int(1, 1024).default(16),
    /** POST /v1/load_lora_adapter and /v1/unload_lora_adapter (vLLM's VLLM_ALLOW_RUNTIME_LORA_UPDATING). */
    allowRuntimeLoraUpdating: z.boolean({ error: 'must be true or false' }).default(false),
    /** The folder run-time loads are confined to (LORA_ROOT): lora_path resolves inside it, symlinks included. Required with allowRuntimeLoraUpdating under Node. */
    loraRoot: z.string({ error: 'must be a folder path' }).trim().min(1, { error: 'must be a folder path' }).nullable().default(null),
  },
  { error: 'must be a JSON object' },
);

export type ServerConfig = Omit<z.output<typeof ServerConfigSchema>, 'servedModelName' | 'toolCallParser'> & {
  servedModelName: string;
  toolCallParser?: ToolCallParserName;
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
  };
}

export const DEFAULT_SERVER_CONFIG: ServerConfig = parseServerConfig({});

/** Environment variable → setting. */
const ENV_VARIABLES = {
  HOST: 'host',
  PORT: 'port',
  MODEL_DIR: 'modelDir',
  MODEL_DTYPE: 'dtype',
  MODEL_FILE: 'modelFile',
  RUNNER: 'runner',
  POOLER_CONFIG: 'poolerConfig',
  SERVED_MODEL_NAME: 'servedModelName',
  DATA_PARALLEL_SIZE: 'dataParallelSize',
  INTRA_OP_NUM_THREADS: 'intraOpNumThreads',
  MODEL_THREAD: 'modelThread',
  MAX_SEQ_LEN: 'maxSeqLen',
  KV_CACHE_MEMORY_BYTES: 'kvCacheMemoryBytes',
  ALLOWED_HOSTS: 'allowedHosts',
  LOG_REQUESTS: 'logRequests',
  TOOL_CALL_PARSER: 'toolCallParser',
  CORS_ALLOWED_ORIGINS: 'corsAllowedOrigins',
  ...Object.fromEntries(REQUEST_BOUND_KEYS.map((key) => [boundEnvName(key), key])),
  LORA_MODULES: 'loraModules',
  MAX_LORAS: 'maxLoras',
  MAX_CPU_LORAS: 'maxCpuLoras',
  MAX_LORA_RANK: 'maxLoraRank',
  VLLM_ALLOW_RUNTIME_LORA_UPDATING: 'allowRuntimeLoraUpdating',
  LORA_ROOT: 'loraRoot',
} as Record<string, string>;

const NUMERIC_ENV_SETTINGS: ReadonlySet<string> = new Set(['port', 'maxSeqLen', 'kvCacheMemoryBytes', 'dataParallelSize', 'intraOpNumThreads', 'maxLoras', 'maxCpuLoras', 'maxLoraRank', ...REQUEST_BOUND_KEYS]);

/** Switches given as one variable: "true" or "false" (anything else is left for validation to report). */
const BOOLEAN_SETTINGS: ReadonlySet<string> = new Set(['logRequests']);

/** Lists given as one variable: comma-separated. */
const LIST_SETTINGS: ReadonlySet<string> = new Set(['allowedHosts']);

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
 * The settings the environment overrides. Empty variables count as unset. A PORT (or
 * DATA_PARALLEL_SIZE) that is not a number is passed through as text so validation reports it.
 */
export function configFromEnv(env: Record<string, string | undefined>): Partial<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const [variable, key] of Object.entries(ENV_VARIABLES)) {
    const value = env[variable];
    if (value === undefined || value.trim() === '') continue;
    const numeric = NUMERIC_ENV_SETTINGS.has(key);
    if (LIST_SETTINGS.has(key)) out[key] = listFromEnv(value);
    else if (BOOLEAN_SETTINGS.has(key)) out[key] = value.trim() === 'true' ? true : value.trim() === 'false' ? false : value;
    else if (key === 'allowRuntimeLoraUpdating') out[key] = /^\s*(1|true)\s*$/i.test(value) ? true : /^\s*(0|false)\s*$/i.test(value) ? false : value;
    else out[key] = numeric && /^\s*\d+\s*$/.test(value) ? Number(value) : value;
  }
  const apiKey = apiKeyFromEnv(env);
  if (apiKey !== undefined) out.apiKey = apiKey;
  return out;
}

/** Applies the precedence defaults < file < environment, then validates. */
export function resolveServerConfig(sources: { file?: unknown; env?: Record<string, string | undefined> }): ServerConfig {
  const file = sources.file ?? {};
  if (typeof file !== 'object' || file === null || Array.isArray(file)) {
    throw new Error('Invalid server configuration:\n  - the configuration file must contain a JSON object');
  }
  return parseServerConfig({ ...file, ...configFromEnv(sources.env ?? {}) });
}

/** Adapters are on when some are configured or may be loaded at run time (vLLM's --enable-lora). */
export function loraEnabled(config: ServerConfig): boolean {
  return config.loraModules.length > 0 || config.allowRuntimeLoraUpdating;
}
