/**
 * The in-memory limiters' per-key buckets, bounded (issue 41, family 12: the map never
 * shrank, one entry per address ever seen). A bucket that has refilled to full is the same
 * as no bucket, so it is dropped when room is needed; if every bucket is still draining, the
 * least recently used goes (that key starts again with a full bucket: the price of a bound,
 * paid by the oldest key, never by a new one being refused).
 */
export interface Bucket {
  tokens: number;
  at: number;
}

/** Keys an isolate's limiter holds at most. */
export const MAX_LIMIT_KEYS = 10_000;

export class BoundedBuckets {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly capacity: number,
    private readonly perMs: number,
    private readonly maxKeys = MAX_LIMIT_KEYS,
  ) {}

  get size(): number {
    return this.buckets.size;
  }

  /** The key's bucket refilled to `now`, most recently used from here on. */
  take(key: string, now: number): Bucket {
    let bucket = this.buckets.get(key);
    if (bucket !== undefined) this.buckets.delete(key);
    else {
      if (this.buckets.size >= this.maxKeys) this.makeRoom(now);
      bucket = { tokens: this.capacity, at: now };
    }
    bucket.tokens = Math.min(this.capacity, bucket.tokens + (now - bucket.at) * this.perMs);
    bucket.at = now;
    this.buckets.set(key, bucket);
    return bucket;
  }

  private makeRoom(now: number): void {
    for (const [key, bucket] of this.buckets) {
      if (bucket.tokens + (now - bucket.at) * this.perMs >= this.capacity) this.buckets.delete(key);
    }
    // Still full: the least recently used tenth goes (Map order is use order here).
    let drop = this.buckets.size >= this.maxKeys ? Math.max(1, Math.floor(this.maxKeys / 10)) : 0;
    for (const key of this.buckets.keys()) {
      if (drop-- <= 0) break;
      this.buckets.delete(key);
    }
  }
}
