/**
 * The Worker's bindings (wrangler.toml [vars], secrets, service bindings) and how they
 * become the server configuration. Every ServerConfig setting except the listening
 * address and the model directory (meaningless in a Worker) is read from the variable of
 * the same name in UPPER_SNAKE_CASE: maxIterTimes ← MAX_ITER_TIMES. Values may be strings
 * (as `wrangler secret` and the dashboard store them) or JSON numbers and booleans.
 */
import { apiKeyFromEnv, DEFAULT_SERVER_CONFIG, listFromEnv, parseServerConfig, type ServerConfig } from '../../config/server-config.js';
import type { FetchLike } from '../../engine/remote/remote-engine.js';
import type { TokenIdSource } from '../../engine/remote/request.js';

export interface WorkerEnv {
  /**
   * Secret, vLLM's --api-key: when set, /v1/*, /generate, /tokenize and /detokenize require
   * `Authorization: Bearer <API_KEY>`. VLLM_API_KEY and API_TOKEN (this Worker's earlier
   * name) are read when API_KEY is not set.
   */
  API_KEY?: string;
  VLLM_API_KEY?: string;
  API_TOKEN?: string;
  /**
   * Whose headers give a client's address for the per-address limits: "cloudflare" (the
   * default: CF-Connecting-IP on requests Cloudflare delivered), "x-forwarded-for:N" (behind
   * N proxies of your own) or "none" (src/gateway/client-address.ts).
   */
  GATEWAY_TRUSTED_PROXY?: string;
  /** Delegate generation to this OpenAI-compatible server (root or …/v1 URL). */
  UPSTREAM_URL?: string;
  /** Service binding to a Worker (or a Tunnel-backed service) that serves the upstream API; wins over UPSTREAM_URL's host. */
  UPSTREAM?: { fetch: FetchLike };
  /** Secret. Sent to the upstream as `Authorization: Bearer …`. */
  UPSTREAM_API_KEY?: string;
  /** The upstream's name for the model; defaults to the served model name. */
  UPSTREAM_MODEL?: string;
  /** "usage" (default) or "logprobs" (vLLM only: exact token ids); see remote-request.ts. */
  UPSTREAM_TOKEN_IDS?: string;
  /** The GGUF Worker (`--env gguf`): the .gguf its build bundles (worker-gguf-engine.ts). */
  MODEL_GGUF?: string;
  /** `quantized` (default) or `float32`, and MatMulNBits' accuracy level (0, 1, 4), as under Node. */
  GGUF_WEIGHTS?: string;
  GGUF_ACCURACY_LEVEL?: string | number;
  /** The isolate's memory cap a GGUF is planned against (default Cloudflare's 128 MB; worker-gguf-limits.ts). */
  ISOLATE_MEMORY_BYTES?: string | number;
  /** The embedding Worker (`--env embeddings`): the model folder its build bundles (embedding-engine.ts). */
  EMBEDDING_MODEL?: string;
  [binding: string]: unknown;
}

/** Settings a Worker cannot have: it does not listen on a socket, read a directory nor manage its process. */
const NOT_IN_A_WORKER = new Set<keyof ServerConfig>([
  'host',
  'port',
  'modelDir',
  'dataParallelSize',
  'headersTimeoutMs',
  'requestTimeoutMs',
  'maxConnections',
  'keepAliveTimeoutMs',
  'shutdownGraceMs',
]);

/** Settings that are lists: a var holds them comma-separated (or as a JSON array). */
const LIST_SETTINGS = new Set<keyof ServerConfig>(['allowedHosts']);

/** The Worker's key variables, first set wins: vLLM's names, then the Worker's former API_TOKEN. */
export const WORKER_API_KEY_VARS = ['API_KEY', 'VLLM_API_KEY', 'API_TOKEN'] as const;

function envName(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase();
}

/** A string var turned into the type the setting expects, when it reads as one; else left for validation to report. */
function coerce(value: unknown, like: unknown): unknown {
  if (typeof value !== 'string') return value;
  const text = value.trim();
  if (typeof like === 'number' && /^-?\d+(\.\d+)?$/.test(text)) return Number(text);
  if (typeof like === 'boolean' && (text === 'true' || text === 'false')) return text === 'true';
  return text;
}

/** The server configuration from the Worker's vars, over the defaults; throws on invalid values. */
export function serverConfigFromEnv(env: WorkerEnv, modelDir: string): ServerConfig {
  const raw: Record<string, unknown> = { modelDir };
  for (const [key, fallback] of Object.entries(DEFAULT_SERVER_CONFIG)) {
    if (NOT_IN_A_WORKER.has(key as keyof ServerConfig)) continue;
    const value = env[envName(key)];
    if (value === undefined || value === null || (typeof value === 'string' && value.trim() === '')) continue;
    if (LIST_SETTINGS.has(key as keyof ServerConfig) && typeof value === 'string') raw[key] = listFromEnv(value);
    else raw[key] = coerce(value, fallback);
  }
  // A key bound as a list or object would read as "no key": refuse to start instead of running open.
  for (const name of WORKER_API_KEY_VARS) {
    const value = env[name];
    if (value !== undefined && value !== null && typeof value !== 'string') {
      throw new Error(`${name} must be one key as a string, got ${Array.isArray(value) ? 'a list' : typeof value}.`);
    }
  }
  const apiKey = apiKeyFromEnv(env, WORKER_API_KEY_VARS);
  if (apiKey !== undefined) raw.apiKey = apiKey;
  return parseServerConfig(raw);
}

export interface UpstreamSettings {
  url: string;
  fetch?: FetchLike;
  apiKey?: string;
  model?: string;
  tokenIds: TokenIdSource;
}

/** Where to delegate generation, or null to run the model in this Worker. */
export function upstreamFromEnv(env: WorkerEnv): UpstreamSettings | null {
  const binding = env.UPSTREAM;
  const url = env.UPSTREAM_URL?.trim() || (binding ? 'https://upstream' : '');
  if (url === '') return null;
  const tokenIds = env.UPSTREAM_TOKEN_IDS?.trim() || 'usage';
  if (tokenIds !== 'usage' && tokenIds !== 'logprobs') {
    throw new Error(`UPSTREAM_TOKEN_IDS must be "usage" or "logprobs", got ${JSON.stringify(tokenIds)}.`);
  }
  try {
    new URL(url);
  } catch {
    throw new Error(`UPSTREAM_URL must be an absolute URL, got ${JSON.stringify(url)}.`);
  }
  return {
    url,
    fetch: binding ? (input, init) => binding.fetch(input, init) : undefined,
    apiKey: env.UPSTREAM_API_KEY?.trim() || undefined,
    model: env.UPSTREAM_MODEL?.trim() || undefined,
    tokenIds,
  };
}
