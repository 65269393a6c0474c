/**
 * The gateway's upstream fleet, as the Worker's vars describe it. `UPSTREAMS` is a JSON
 * list, one entry per inference server:
 *
 *   [{ "name": "gpu-a", "url": "https://a.internal:8000", "weight": 3,
 *      "model": "llama-3-8b", "upstream_model": "meta-llama/Meta-Llama-3-8B-Instruct",
 *      "dialect": "vllm", "api_key_secret": "GPU_A_KEY" }, ...]
 *
 * `model` is the name clients ask for (one model per upstream; several upstreams may
 * serve the same one), `upstream_model` the name the server itself uses. Credentials are
 * never written in the list: `api_key_secret` names the Worker secret holding the key,
 * `service` a service binding to reach the server through. Without UPSTREAMS, the single
 * upstream of UPSTREAM_URL / UPSTREAM / UPSTREAM_API_KEY / UPSTREAM_MODEL is the fleet.
 * Deadlines (upstream-timeouts.ts): `connect_timeout_seconds`, `first_byte_timeout_seconds`
 * and `idle_timeout_seconds` per entry, over UPSTREAM_CONNECT_TIMEOUT_SECONDS,
 * UPSTREAM_FIRST_BYTE_TIMEOUT_SECONDS and UPSTREAM_IDLE_TIMEOUT_SECONDS for the fleet.
 */
import type { FetchLike } from '../engine/remote/remote-engine.js';
import { DIALECTS, type Dialect } from './dialects.js';
import { DEFAULT_UPSTREAM_TIMEOUTS, type UpstreamTimeouts } from './upstream-timeouts.js';

export interface UpstreamTarget {
  /** Shown in errors and logs; never the URL or the key. */
  name: string;
  url: string;
  weight: number;
  /** The model name clients use. */
  model: string;
  /** The name the upstream serves it under. */
  upstreamModel: string;
  dialect: Dialect;
  /** Request fields this upstream cannot honour (beyond what its dialect knows): refused with a 400 naming them. */
  unsupported: ReadonlySet<string>;
  apiKey?: string;
  fetch: FetchLike;
  timeouts: UpstreamTimeouts;
  /** llama.cpp: its chat template knows tools, so a required or named tool_choice is honoured. */
  toolCalls: boolean;
}

interface RawUpstream {
  name?: unknown;
  url?: unknown;
  weight?: unknown;
  model?: unknown;
  upstream_model?: unknown;
  dialect?: unknown;
  unsupported?: unknown;
  api_key_secret?: unknown;
  service?: unknown;
  connect_timeout_seconds?: unknown;
  first_byte_timeout_seconds?: unknown;
  idle_timeout_seconds?: unknown;
  tool_calls?: unknown;
}

export interface FleetEnv {
  UPSTREAMS?: unknown;
  UPSTREAM_URL?: string;
  UPSTREAM?: { fetch: FetchLike };
  UPSTREAM_API_KEY?: string;
  UPSTREAM_MODEL?: string;
  UPSTREAM_DIALECT?: string;
  UPSTREAM_CONNECT_TIMEOUT_SECONDS?: unknown;
  UPSTREAM_FIRST_BYTE_TIMEOUT_SECONDS?: unknown;
  UPSTREAM_IDLE_TIMEOUT_SECONDS?: unknown;
  [binding: string]: unknown;
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

function absoluteUrl(value: string, where: string): string {
  try {
    new URL(value);
  } catch {
    throw new Error(`${where}: url must be an absolute URL, got ${JSON.stringify(value)}.`);
  }
  return value;
}

function dialectOf(value: unknown, where: string): Dialect {
  const name = text(value) ?? 'vllm';
  if (!(DIALECTS as readonly string[]).includes(name)) {
    throw new Error(`${where}: dialect must be one of ${DIALECTS.join(', ')}, got ${JSON.stringify(name)}.`);
  }
  return name as Dialect;
}

function serviceFetch(binding: unknown, where: string): FetchLike {
  if (typeof binding !== 'object' || binding === null || typeof (binding as { fetch?: unknown }).fetch !== 'function') {
    throw new Error(`${where}: the service binding is missing or not a service.`);
  }
  const service = binding as { fetch: FetchLike };
  return (input, init) => service.fetch(input, init);
}

function secondsSetting(value: unknown, where: string, fallbackMs: number): number {
  if (value === undefined || value === null || value === '') return fallbackMs;
  const seconds = typeof value === 'string' ? Number(value.trim()) : value;
  if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds <= 0) {
    throw new Error(`${where} must be a positive number of seconds, got ${JSON.stringify(value)}.`);
  }
  return seconds * 1000;
}

/** The fleet-wide deadlines (UPSTREAM_*_TIMEOUT_SECONDS), over the defaults. */
function fleetTimeouts(env: FleetEnv): UpstreamTimeouts {
  return {
    connectMs: secondsSetting(env.UPSTREAM_CONNECT_TIMEOUT_SECONDS, 'UPSTREAM_CONNECT_TIMEOUT_SECONDS', DEFAULT_UPSTREAM_TIMEOUTS.connectMs),
    firstByteMs: secondsSetting(env.UPSTREAM_FIRST_BYTE_TIMEOUT_SECONDS, 'UPSTREAM_FIRST_BYTE_TIMEOUT_SECONDS', DEFAULT_UPSTREAM_TIMEOUTS.firstByteMs),
    idleMs: secondsSetting(env.UPSTREAM_IDLE_TIMEOUT_SECONDS, 'UPSTREAM_IDLE_TIMEOUT_SECONDS', DEFAULT_UPSTREAM_TIMEOUTS.idleMs),
  };
}

/** One entry's deadlines: its own *_timeout_seconds over the fleet's. */
function entryTimeouts(raw: RawUpstream, where: string, fleet: UpstreamTimeouts): UpstreamTimeouts {
  return {
    connectMs: secondsSetting(raw.connect_timeout_seconds, `${where}: connect_timeout_seconds`, fleet.connectMs),
    firstByteMs: secondsSetting(raw.first_byte_timeout_seconds, `${where}: first_byte_timeout_seconds`, fleet.firstByteMs),
    idleMs: secondsSetting(raw.idle_timeout_seconds, `${where}: idle_timeout_seconds`, fleet.idleMs),
  };
}

const globalFetch: FetchLike = (input, init) => fetch(input, init);

function fromEntry(raw: RawUpstream, index: number, env: FleetEnv, defaultModel: string): UpstreamTarget {
  const name = text(raw.name) ?? `upstream-${index + 1}`;
  const where = `UPSTREAMS[${index}] (${name})`;
  const serviceName = text(raw.service);
  const url = absoluteUrl(text(raw.url) ?? (serviceName ? 'https://upstream' : ''), where);
  const weight = raw.weight === undefined ? 1 : Number(raw.weight);
  if (!Number.isFinite(weight) || weight <= 0) throw new Error(`${where}: weight must be a positive number, got ${JSON.stringify(raw.weight)}.`);
  const model = text(raw.model) ?? defaultModel;
  let apiKey: string | undefined;
  const secret = text(raw.api_key_secret);
  if (secret !== undefined) {
    apiKey = text(env[secret]);
    if (apiKey === undefined) throw new Error(`${where}: the secret ${secret} named by api_key_secret is not set.`);
  }
  const unsupported = Array.isArray(raw.unsupported) ? raw.unsupported.filter((f): f is string => typeof f === 'string') : [];
  return {
    name,
    url,
    weight,
    model,
    upstreamModel: text(raw.upstream_model) ?? model,
    dialect: dialectOf(raw.dialect, where),
    unsupported: new Set(unsupported),
    apiKey,
    fetch: serviceName ? serviceFetch(env[serviceName], where) : globalFetch,
    timeouts: entryTimeouts(raw, where, fleetTimeouts(env)),
    toolCalls: raw.tool_calls === true,
  };
}

/** The fleet, or an empty list when no upstream is configured. Throws on invalid settings. */
export function upstreamsFromEnv(env: FleetEnv, defaultModel: string): UpstreamTarget[] {
  if (env.UPSTREAMS !== undefined && env.UPSTREAMS !== null && env.UPSTREAMS !== '') {
    let list: unknown = env.UPSTREAMS;
    if (typeof list === 'string') {
      try {
        list = JSON.parse(list);
      } catch {
        throw new Error('UPSTREAMS must be a JSON list of upstreams.');
      }
    }
    if (!Array.isArray(list) || list.length === 0) throw new Error('UPSTREAMS must be a non-empty JSON list of upstreams.');
    const targets = list.map((raw, i) => fromEntry((raw ?? {}) as RawUpstream, i, env, defaultModel));
    const names = new Set(targets.map((t) => t.name));
    if (names.size !== targets.length) throw new Error('UPSTREAMS: every upstream needs a distinct name.');
    return targets;
  }
  const url = text(env.UPSTREAM_URL) ?? (env.UPSTREAM ? 'https://upstream' : undefined);
  if (url === undefined) return [];
  return [
    {
      name: 'upstream',
      url: absoluteUrl(url, 'UPSTREAM_URL'),
      weight: 1,
      model: defaultModel,
      upstreamModel: text(env.UPSTREAM_MODEL) ?? defaultModel,
      dialect: dialectOf(env.UPSTREAM_DIALECT, 'UPSTREAM_DIALECT'),
      unsupported: new Set(),
      apiKey: text(env.UPSTREAM_API_KEY),
      fetch: env.UPSTREAM ? serviceFetch(env.UPSTREAM, 'UPSTREAM') : globalFetch,
      timeouts: fleetTimeouts(env),
      toolCalls: false,
    },
  ];
}

/** …/v1/<path> under an upstream's base URL, whether or not it already ends in /v1. */
export function upstreamUrl(base: string, path: string): string {
  const url = new URL(base);
  const root = url.pathname.replace(/\/+$/, '').replace(/\/v1$/, '');
  url.pathname = `${root}${path}`;
  return url.toString();
}
