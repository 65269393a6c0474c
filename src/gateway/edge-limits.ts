/**
 * Per-key limits at the edge: a request rate (requests per period) and a cap on
 * requests in flight (a stream counts until it ends or its client leaves), and tokens
 * per minute. The key is the authenticated client key's name, else its IP address; a
 * named key (client-keys.ts) may carry its own limits. Deployed, both use the platform's
 * primitives (the rate-limiting binding, a Durable Object per key: see
 * src/runtime/worker/limits.ts), so every isolate and location shares one count; in
 * `wrangler dev` or without those bindings, the in-memory versions here count per isolate.
 */

export type RateDecision = { allowed: true } | { allowed: false; retryAfterSeconds: number };

export interface RateLimiter {
  limit(key: string): Promise<RateDecision>;
}

/** Frees a concurrency slot; calling it more than once is harmless. */
export type Release = () => void;

export interface ConcurrencyLimiter {
  /**
   * A release for the slot taken, or null when `key` already has its maximum in flight.
   * `waitUntil` keeps work the release starts (a call to a Durable Object) alive past the response.
   */
  acquire(key: string, waitUntil?: (promise: Promise<unknown>) => void): Promise<Release | null>;
}

export interface EdgeLimits {
  rate: RateLimiter | null;
  concurrency: ConcurrencyLimiter | null;
  /** TOKENS_PER_MINUTE_PER_KEY's budget. */
  tokens: MemoryTokenBudget | null;
  /** The rate period keys' own request limits count over unless they name theirs. */
  periodSeconds: number;
  /** A concurrency cap of `max` on the same primitive (Durable Object or memory): for keys with their own. */
  concurrencyWith(max: number): ConcurrencyLimiter;
  /** Retry-After for a refusal by the concurrency cap: streams end at their own pace. */
  concurrencyRetryAfterSeconds: number;
}

/**
 * A token bucket per key: `requests` of burst, refilled at `requests` per `periodSeconds`,
 * so Retry-After is exactly when the next request would pass.
 */
export class MemoryRateLimiter implements RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private readonly perMs: number;

  constructor(
    private readonly requests: number,
    periodSeconds: number,
    private readonly now: () => number = Date.now,
  ) {
    this.perMs = requests / (periodSeconds * 1000);
  }

  async limit(key: string): Promise<RateDecision> {
    const now = this.now();
    const bucket = this.buckets.get(key) ?? { tokens: this.requests, at: now };
    bucket.tokens = Math.min(this.requests, bucket.tokens + (now - bucket.at) * this.perMs);
    bucket.at = now;
    this.buckets.set(key, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return { allowed: true };
    }
    return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - bucket.tokens) / this.perMs / 1000)) };
  }
}

/**
 * Tokens per minute per key: a bucket of `perMinute` tokens refilled continuously. A
 * request is admitted while the bucket is above zero and pays for the tokens it used
 * once its response has ended (the upstream's usage), so one request can overdraw it;
 * the key then waits until the debt is refilled. Per isolate.
 */
export class MemoryTokenBudget {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private readonly perMs: number;

  constructor(
    private readonly perMinute: number,
    private readonly now: () => number = Date.now,
  ) {
    this.perMs = perMinute / 60_000;
  }

  private bucket(key: string) {
    const now = this.now();
    const bucket = this.buckets.get(key) ?? { tokens: this.perMinute, at: now };
    bucket.tokens = Math.min(this.perMinute, bucket.tokens + (now - bucket.at) * this.perMs);
    bucket.at = now;
    this.buckets.set(key, bucket);
    return bucket;
  }

  admit(key: string): RateDecision {
    const bucket = this.bucket(key);
    if (bucket.tokens > 0) return { allowed: true };
    return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - bucket.tokens) / this.perMs / 1000)) };
  }

  spend(key: string, tokens: number): void {
    if (tokens > 0) this.bucket(key).tokens -= tokens;
  }
}

/** Cloudflare's rate-limiting binding ([[unsafe.bindings]] type "ratelimit"): `limit({ key })` → `{ success }`. */
export interface RateLimitBinding {
  limit(options: { key: string }): Promise<{ success: boolean }>;
}

/** The binding does not say when the window reopens: its period is the honest upper bound. */
export class BindingRateLimiter implements RateLimiter {
  constructor(
    private readonly binding: RateLimitBinding,
    private readonly periodSeconds: number,
  ) {}

  async limit(key: string): Promise<RateDecision> {
    const { success } = await this.binding.limit({ key });
    return success ? { allowed: true } : { allowed: false, retryAfterSeconds: this.periodSeconds };
  }
}

export class MemoryConcurrencyLimiter implements ConcurrencyLimiter {
  private readonly inFlight = new Map<string, number>();

  constructor(private readonly max: number) {}

  async acquire(key: string): Promise<Release | null> {
    const count = this.inFlight.get(key) ?? 0;
    if (count >= this.max) return null;
    this.inFlight.set(key, count + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.inFlight.get(key) ?? 1) - 1;
      if (left <= 0) this.inFlight.delete(key);
      else this.inFlight.set(key, left);
    };
  }
}

/** A lease not released by then (its isolate died mid-stream) stops counting. */
const LEASE_MS = 15 * 60_000;

/** The leases of one key's requests in flight: what a KeyConcurrency Durable Object holds. */
export class KeyLeases {
  private readonly leases = new Map<string, number>();

  constructor(private readonly now: () => number = Date.now) {}

  /** A lease id, or null when `max` are already out. */
  acquire(max: number): string | null {
    const now = this.now();
    for (const [id, expiry] of this.leases) if (expiry <= now) this.leases.delete(id);
    if (this.leases.size >= max) return null;
    const id = crypto.randomUUID();
    this.leases.set(id, now + LEASE_MS);
    return id;
  }

  release(lease: string): void {
    this.leases.delete(lease);
  }
}

/**
 * Whose budget a request spends: the name of the client key it authenticated with (so
 * the key itself is never a map key, an object name or a log line), else, with
 * authentication off, the client address Cloudflare reports. A bearer token the gateway
 * did not verify never picks the budget: a client could otherwise invent a fresh one
 * per request.
 */
export function limitKey(request: Request, keyName: string | null): string {
  if (keyName !== null) return `key:${keyName}`;
  const ip = request.headers.get('cf-connecting-ip') ?? request.headers.get('x-forwarded-for')?.split(',')[0]?.trim();
  return ip ? `ip:${ip}` : 'anonymous';
}

/**
 * `body` as a stream that calls `onEnd` once, when it is read to the end, fails, or its
 * reader cancels (the client left): then the upstream's body is cancelled too. Nothing
 * is read ahead of the client (highWaterMark 0), so chunks leave as they arrive.
 * `onChunk` sees each chunk on its way (usage-tap.ts reads the token counts so).
 */
export function onStreamEnd(body: ReadableStream<Uint8Array>, onEnd: () => void, onChunk?: (chunk: Uint8Array) => void): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    onEnd();
  };
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const { done, value } = await reader.read();
          if (done) {
            end();
            controller.close();
          } else {
            onChunk?.(value);
            controller.enqueue(value);
          }
        } catch (error) {
          end();
          controller.error(error);
        }
      },
      async cancel(reason) {
        end();
        await reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}
