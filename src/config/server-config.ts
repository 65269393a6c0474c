/**
 * Server configuration: MindIE-style limits plus the batching limits of the scheduler.
 *
 * Precedence, lowest first: DEFAULT_SERVER_CONFIG < the config file < the environment
 * (HOST, PORT, MODEL_DIR, MODEL_DTYPE, MODEL_FILE, SERVED_MODEL_NAME, DATA_PARALLEL_SIZE,
 * LORA_MODULES, MAX_LORAS, MAX_LORA_RANK, VLLM_ALLOW_RUNTIME_LORA_UPDATING). `resolveServerConfig` applies it; this
 * module is pure (no fs, no process.env), so the Node entry reads the file and passes
 * its parsed JSON and `process.env` in.
 */
import { z } from 'zod';
import { MODEL_DTYPES } from '../engine/model-variants.js';
import type { SchedulerLimits } from '../engine/scheduler-limits.js';
import { describeIssue, formatPath, plainErrorMap } from '../protocol/issues.js';

const int = (min: number, max = Number.MAX_SAFE_INTEGER) => {
  const requirement = max === Number.MAX_SAFE_INTEGER ? `must be an integer >= ${min}` : `must be an integer in [${min}, ${max}]`;
  return z.number({ error: requirement }).refine((v) => Number.isSafeInteger(v) && v >= min && v <= max, { error: requirement });
};
const nonEmpty = z.string({ error: 'must be a non-empty string' }).min(1, { error: 'must not be empty' });

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
     * fp32 → onnx/model.onnx, q4 → onnx/model_q4.onnx, ... (engine/model-variants.ts).
     */
    dtype: z.enum(MODEL_DTYPES, { error: `must be one of ${MODEL_DTYPES.map((d) => `"${d}"`).join(', ')}` }).optional(),
    /** Any .onnx file inside the model folder (e.g. "onnx/my-export.onnx"); wins over dtype. */
    modelFile: nonEmpty.optional(),
    /**
     * Decode sequences of different requests in one batch. Off: one request per model
     * call (its own n / beams still share it), for graphs whose outputs batching changes
     * (dynamic int8 quantisation computes its scales over the whole batch).
     */
    crossRequestBatching: z.boolean({ error: 'must be true or false' }).default(true),
    /** Name clients pass as `model`; defaults to the model directory's name. */
    servedModelName: nonEmpty.optional(),
    /** Longest sequence (prompt + output) the server runs, capped by the model's max_position_embeddings. */
    maxSeqLen: int(2).default(512),
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
     * LoRA adapters served by name (vLLM's --lora-modules): "name=path,..." (LORA_MODULES), or
     * a list of "name=path" strings or {"name", "path"} objects. Each is a PEFT folder.
     */
    loraModules: loraModulesSetting.default([]),
    /** Adapters one model call can mix (vLLM's max_loras); more wait for a free slot. */
    maxLoras: int(1, 64).default(4),
    /** Largest adapter rank accepted (vLLM's max_lora_rank). */
    maxLoraRank: int(1, 1024).default(16),
    /** POST /v1/load_lora_adapter and /v1/unload_lora_adapter (vLLM's VLLM_ALLOW_RUNTIME_LORA_UPDATING). */
    allowRuntimeLoraUpdating: z.boolean({ error: 'must be true or false' }).default(false),
  },
  { error: 'must be a JSON object' },
);

export type ServerConfig = Omit<z.output<typeof ServerConfigSchema>, 'servedModelName'> & { servedModelName: string };

/** The engine's scheduler settings from a server configuration. */
export function schedulerLimitsOf(config: ServerConfig): SchedulerLimits {
  return {
    maxRunningSequences: config.maxRunningSequences,
    maxBatchedTokens: config.maxBatchedTokens,
    maxWaitingRequests: config.maxWaitingRequests,
    waitingDeadlineMs: config.waitingDeadlineMs,
    speculativeDecoding: config.speculativeDecoding,
    numSpeculativeTokens: config.numSpeculativeTokens,
    speculativeMaxSequences: config.speculativeMaxSequences,
    crossRequestBatching: config.crossRequestBatching,
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
  return { ...config, servedModelName: config.servedModelName ?? baseName(config.modelDir) };
}

export const DEFAULT_SERVER_CONFIG: ServerConfig = parseServerConfig({});

/** Environment variable → setting. */
const ENV_VARIABLES = {
  HOST: 'host',
  PORT: 'port',
  MODEL_DIR: 'modelDir',
  MODEL_DTYPE: 'dtype',
  MODEL_FILE: 'modelFile',
  SERVED_MODEL_NAME: 'servedModelName',
  DATA_PARALLEL_SIZE: 'dataParallelSize',
  LORA_MODULES: 'loraModules',
  MAX_LORAS: 'maxLoras',
  MAX_LORA_RANK: 'maxLoraRank',
  VLLM_ALLOW_RUNTIME_LORA_UPDATING: 'allowRuntimeLoraUpdating',
} as const;

const NUMERIC_SETTINGS = new Set<string>(['port', 'dataParallelSize', 'maxLoras', 'maxLoraRank']);

/**
 * The settings the environment overrides. Empty variables count as unset. A PORT (or
 * DATA_PARALLEL_SIZE) that is not a number is passed through as text so validation reports it.
 */
export function configFromEnv(env: Record<string, string | undefined>): Partial<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const [variable, key] of Object.entries(ENV_VARIABLES)) {
    const value = env[variable];
    if (value === undefined || value.trim() === '') continue;
    const numeric = NUMERIC_SETTINGS.has(key);
    if (key === 'allowRuntimeLoraUpdating') out[key] = /^\s*(1|true)\s*$/i.test(value) ? true : /^\s*(0|false)\s*$/i.test(value) ? false : value;
    else out[key] = numeric && /^\s*\d+\s*$/.test(value) ? Number(value) : value;
  }
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
