/**
 * The admission rule every shared queue of this server applies (issue 41): at most `maxTotal`
 * items held in all, and at most `maxPerClient` of them by one client, so no client can fill
 * the queue for the others. The worker threads' queues (worker-pool.ts) hold jobs waiting for
 * a thread; the structured-output compile gate (guided/compile-gate.ts) holds compiles waiting
 * or running. Each caller turns a refusal into its own error (a 503 for `total`, a 429 for
 * `client`).
 *
 * Items that name no client (workerd and the page give no address, internal jobs) count
 * towards the total but are not held to a share: one share for all of them would make a
 * server-wide 429.
 */
export interface ShareLimits {
  /** Items held, all clients together. */
  maxTotal: number;
  /** Items one named client may hold. */
  maxPerClient: number;
}

/** Why an item may not be taken: the whole queue is full, or the client's own share is. */
export type ShareRefusal = 'total' | 'client';

export class ClientShares {
  private readonly perClient = new Map<string, number>();
  private held = 0;

  constructor(private readonly limits: ShareLimits) {}

  /** Items held, all clients together. */
  get total(): number {
    return this.held;
  }

  /** Items `client` holds (for messages). */
  of(client: string | undefined): number {
    return client === undefined ? 0 : (this.perClient.get(client) ?? 0);
  }

  /** Why `client` may not take one more item now, or null when it may. */
  refusal(client: string | undefined): ShareRefusal | null {
    if (this.held >= this.limits.maxTotal) return 'total';
    if (client !== undefined && this.of(client) >= this.limits.maxPerClient) return 'client';
    return null;
  }

  /** Counts one more item for `client` (whether it passed `refusal` is the caller's business). */
  add(client: string | undefined): void {
    this.held += 1;
    if (client !== undefined) this.perClient.set(client, this.of(client) + 1);
  }

  /** One of `client`'s items is gone; a client holding none is forgotten (the map stays as small as the queue). */
  remove(client: string | undefined): void {
    this.held = Math.max(0, this.held - 1);
    if (client === undefined) return;
    const left = this.of(client) - 1;
    if (left <= 0) this.perClient.delete(client);
    else this.perClient.set(client, left);
  }

  clear(): void {
    this.perClient.clear();
    this.held = 0;
  }
}
