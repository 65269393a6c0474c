/**
 * The gateway's client keys. `API_KEY` (vLLM's one key, also `VLLM_API_KEY` / `API_TOKEN`)
 * and `API_KEYS`, a JSON list of named keys, each with its own limits:
 *
 *   [{ "name": "alice", "sha256": "<hex SHA-256 of the key>", "rate_limit_requests": 60,
 *      "rate_limit_period_seconds": 60, "tokens_per_minute": 20000, "max_concurrent_requests": 4 },
 *    { "name": "bob", "key": "sk-bob-..." }]
 *
 * A key is given as `sha256` (so the list itself holds no secret and can be a var) or as
 * `key` (then API_KEYS belongs in a secret); only digests are kept in memory. A presented
 * key is hashed and compared with every digest in a loop that never exits early, so
 * neither timing nor which key matched tells anything about the others.
 *
 * Any key setting that cannot be read (a list where one key is expected, JSON that does
 * not parse, an entry without a name or key, an unknown field, a duplicate) is a
 * configuration error: the gateway then refuses every request with a 500 naming the
 * setting. It never falls back to running without authentication.
 */
import { digest, sameBytes } from '../http/security/api-key.js';

export interface KeyLimits {
  rateLimitRequests?: number;
  rateLimitPeriodSeconds?: number;
  tokensPerMinute?: number;
  maxConcurrentRequests?: number;
}

export interface ClientKey {
  /** Shown in logs and metrics: never the key. */
  name: string;
  limits: KeyLimits;
}

interface StoredKey extends ClientKey {
  digest: Uint8Array;
}

export const SINGLE_KEY_VARS = ['API_KEY', 'VLLM_API_KEY', 'API_TOKEN'] as const;
/** The name API_KEY's key has in logs and metrics. */
export const SINGLE_KEY_NAME = 'default';

const LIMIT_FIELDS: Record<string, keyof KeyLimits> = {
  rate_limit_requests: 'rateLimitRequests',
  rate_limit_period_seconds: 'rateLimitPeriodSeconds',
  tokens_per_minute: 'tokensPerMinute',
  max_concurrent_requests: 'maxConcurrentRequests',
};
const ENTRY_FIELDS = new Set(['name', 'key', 'sha256', ...Object.keys(LIMIT_FIELDS)]);
const sha256 = digest;

function hexDigest(value: unknown, where: string): Uint8Array {
  if (typeof value !== 'string' || !/^[0-9a-fA-F]{64}$/.test(value.trim())) {
    throw new Error(`${where}: sha256 must be the 64 hex digits of the key's SHA-256 digest.`);
  }
  const hex = value.trim();
  return Uint8Array.from({ length: 32 }, (_, i) => parseInt(hex.slice(i * 2, i * 2 + 2), 16));
}

export class ClientKeys {
  private constructor(private readonly keys: readonly StoredKey[]) {}

  /** The keys' names and limits (no digests). */
  all(): ClientKey[] {
    return this.keys.map(({ name, limits }) => ({ name, limits }));
  }

  /** The key `token` is, or null; the same work whichever key (if any) matches. */
  async identify(token: string): Promise<ClientKey | null> {
    const actual = await sha256(token);
    let found: StoredKey | null = null;
    for (const key of this.keys) {
      const same = sameBytes(key.digest, actual);
      found = same ? key : found;
    }
    return found === null ? null : { name: found.name, limits: found.limits };
  }

  /** The keys the env configures, or null when it configures none. Throws on any it cannot read. */
  static async fromEnv(env: Record<string, unknown>): Promise<ClientKeys | null> {
    const keys: StoredKey[] = [];
    for (const name of SINGLE_KEY_VARS) {
      const value = env[name];
      if (value === undefined || value === null) continue;
      if (typeof value !== 'string') {
        throw new Error(`${name} must be one key as a string, got ${Array.isArray(value) ? 'a list' : typeof value}: several keys go in API_KEYS (with names).`);
      }
      const key = value.trim();
      if (key === '') continue;
      if (/^[[{]/.test(key)) throw new Error(`${name} looks like JSON: one key goes in ${name}, several keys in API_KEYS (with names).`);
      keys.push({ name: SINGLE_KEY_NAME, digest: await sha256(key), limits: {} });
      break;
    }
    keys.push(...(await listedKeys(env.API_KEYS)));
    const names = new Set(keys.map((k) => k.name));
    if (names.size !== keys.length) throw new Error(`API_KEYS: every key needs a distinct name (API_KEY is "${SINGLE_KEY_NAME}").`);
    for (let i = 0; i < keys.length; i++) {
      for (let j = i + 1; j < keys.length; j++) {
        if (sameBytes(keys[i].digest, keys[j].digest)) throw new Error(`API_KEYS: the keys named ${keys[i].name} and ${keys[j].name} are the same key.`);
      }
    }
    return keys.length === 0 ? null : new ClientKeys(keys);
  }
}

async function listedKeys(setting: unknown): Promise<StoredKey[]> {
  if (setting === undefined || setting === null || (typeof setting === 'string' && setting.trim() === '')) return [];
  let list = setting;
  if (typeof list === 'string') {
    try {
      list = JSON.parse(list);
    } catch {
      throw new Error('API_KEYS must be a JSON list of keys ({"name": ..., "key" or "sha256": ...}); it does not parse as JSON.');
    }
  }
  if (!Array.isArray(list) || list.length === 0) throw new Error('API_KEYS must be a non-empty JSON list of keys.');
  return Promise.all(list.map((entry, index) => listedKey(entry, index)));
}

async function listedKey(entry: unknown, index: number): Promise<StoredKey> {
  const where = `API_KEYS[${index}]`;
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) throw new Error(`${where} must be an object with a name and a key or sha256.`);
  const raw = entry as Record<string, unknown>;
  for (const field of Object.keys(raw)) if (!ENTRY_FIELDS.has(field)) throw new Error(`${where}: unknown field ${JSON.stringify(field)}.`);
  if (typeof raw.name !== 'string' || raw.name.trim() === '' || raw.name.length > 64) throw new Error(`${where}: name must be a non-empty string (at most 64 characters).`);
  const name = raw.name.trim();
  if (('key' in raw) === ('sha256' in raw)) throw new Error(`${where} (${name}): give exactly one of key and sha256.`);
  let digest: Uint8Array;
  if ('key' in raw) {
    if (typeof raw.key !== 'string' || raw.key.trim() === '') throw new Error(`${where} (${name}): key must be a non-empty string.`);
    digest = await sha256(raw.key.trim());
  } else {
    digest = hexDigest(raw.sha256, `${where} (${name})`);
  }
  const limits: KeyLimits = {};
  for (const [field, setting] of Object.entries(LIMIT_FIELDS)) {
    if (raw[field] === undefined) continue;
    const value = raw[field];
    if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) throw new Error(`${where} (${name}): ${field} must be a positive number, got ${JSON.stringify(value)}.`);
    limits[setting] = value;
  }
  return { name, digest, limits };
}
