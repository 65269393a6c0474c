/**
 * The edge limits (src/gateway/edge-limits.ts) on Cloudflare's primitives, with the
 * in-memory versions as the fallback (`wrangler dev`, or no binding configured):
 *
 *  - RATE_LIMITER: the rate-limiting binding (wrangler.toml [[ratelimits]]), counted
 *    per key across the location's isolates. RATE_LIMIT_REQUESTS /
 *    RATE_LIMIT_PERIOD_SECONDS size the in-memory bucket when it is absent.
 *  - CONCURRENCY_LIMITER: a Durable Object namespace of KeyConcurrency, one object per
 *    key, so a key's streams are counted wherever they run.
 *    MAX_CONCURRENT_REQUESTS_PER_KEY is the cap either way.
 *  - TOKENS_PER_MINUTE_PER_KEY: prompt + completion tokens per key and minute, in memory
 *    (per isolate: there is no platform primitive that counts tokens).
 * A key in API_KEYS may carry its own values of these (src/gateway/client-keys.ts).
 */
import { DurableObject } from 'cloudflare:workers';
import {
  BindingRateLimiter,
  KeyLeases,
  MemoryConcurrencyLimiter,
  MemoryRateLimiter,
  MemoryTokenBudget,
  type ConcurrencyLimiter,
  type EdgeLimits,
  type RateLimitBinding,
  type Release,
} from '../../gateway/edge-limits.js';

/** One key's requests in flight (KeyLeases). In memory: an evicted object has nothing in flight worth keeping. */
export class KeyConcurrency extends DurableObject {
  private readonly leases = new KeyLeases();

  acquire(max: number): string | null {
    return this.leases.acquire(max);
  }

  release(lease: string): void {
    this.leases.release(lease);
  }
}

interface KeyConcurrencyStub {
  acquire(max: number): Promise<string | null>;
  release(lease: string): Promise<void>;
}

interface ConcurrencyNamespace {
  idFromName(name: string): unknown;
  get(id: unknown): KeyConcurrencyStub;
}

class DurableConcurrencyLimiter implements ConcurrencyLimiter {
  constructor(
    private readonly namespace: ConcurrencyNamespace,
    private readonly max: number,
  ) {}

  async acquire(key: string, waitUntil?: (promise: Promise<unknown>) => void): Promise<Release | null> {
    const stub = this.namespace.get(this.namespace.idFromName(key));
    const lease = await stub.acquire(this.max);
    if (lease === null) return null;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const done = Promise.resolve()
        .then(() => stub.release(lease))
        .catch(() => {});
      waitUntil?.(done);
    };
  }
}

function positive(value: unknown, name: string): number | null {
  if (value === undefined || value === null || value === '') return null;
  const number = Number(value);
  if (!Number.isFinite(number) || number <= 0) throw new Error(`${name} must be a positive number, got ${JSON.stringify(value)}.`);
  return number;
}

function isRateLimitBinding(value: unknown): value is RateLimitBinding {
  return typeof value === 'object' && value !== null && typeof (value as RateLimitBinding).limit === 'function';
}

function isNamespace(value: unknown): value is ConcurrencyNamespace {
  return typeof value === 'object' && value !== null && typeof (value as ConcurrencyNamespace).idFromName === 'function';
}

/** The limits the env configures (none when it sets none). Throws on invalid values. */
export function edgeLimitsFromEnv(env: Record<string, unknown>): EdgeLimits {
  const period = positive(env.RATE_LIMIT_PERIOD_SECONDS, 'RATE_LIMIT_PERIOD_SECONDS') ?? 60;
  const requests = positive(env.RATE_LIMIT_REQUESTS, 'RATE_LIMIT_REQUESTS');
  const maxConcurrent = positive(env.MAX_CONCURRENT_REQUESTS_PER_KEY, 'MAX_CONCURRENT_REQUESTS_PER_KEY');
  const tokensPerMinute = positive(env.TOKENS_PER_MINUTE_PER_KEY, 'TOKENS_PER_MINUTE_PER_KEY');
  const rate = isRateLimitBinding(env.RATE_LIMITER)
    ? new BindingRateLimiter(env.RATE_LIMITER, period)
    : requests !== null
      ? new MemoryRateLimiter(requests, period)
      : null;
  const namespace = isNamespace(env.CONCURRENCY_LIMITER) ? env.CONCURRENCY_LIMITER : null;
  const concurrencyWith = (max: number): ConcurrencyLimiter =>
    namespace !== null ? new DurableConcurrencyLimiter(namespace, max) : new MemoryConcurrencyLimiter(max);
  return {
    rate,
    concurrency: maxConcurrent === null ? null : concurrencyWith(maxConcurrent),
    tokens: tokensPerMinute === null ? null : new MemoryTokenBudget(tokensPerMinute),
    periodSeconds: period,
    concurrencyWith,
    concurrencyRetryAfterSeconds: 1,
  };
}
