/**
 * What watches a queue's unread items (unread-output.ts): their size, and each change of
 * the queue's unread total.
 */
export interface QueueMeter<T> {
  sizeOf(item: T): number;
  /** The queue's unread bytes changed by `bytes` (negative: read or dropped). */
  changed(bytes: number): void;
}

/**
 * Hands one sequence's deltas from the step loop to the request that consumes them.
 * The loop never waits for a consumer: a slow client only lets its own queue grow, it
 * never stalls the batch. How far it may grow is the meter's to judge (a stream's share
 * of unread output, the server's budget): past it the queue is overflowed, its items
 * dropped, and its consumer gets the overflow's error next.
 */
export class DeltaQueue<T> implements AsyncIterable<T> {
  private items: T[] = [];
  /** Per item, its size by the meter (empty without one). */
  private sizes: number[] = [];
  private closed = false;
  private failure: unknown = null;
  private wake: (() => void) | null = null;
  private meter: QueueMeter<T> | null = null;
  /** By the meter: the size of the items not yet read. */
  unreadBytes = 0;

  /** From now on, `meter` sizes every item pushed and hears every change of the unread total. */
  watch(meter: QueueMeter<T>): void {
    this.meter = meter;
  }

  /** The queue's meter stops counting it: its unread items no longer count anywhere (the consumer left). */
  unwatch(): void {
    const meter = this.meter;
    this.meter = null;
    this.sizes = [];
    if (meter !== null && this.unreadBytes !== 0) meter.changed(-this.unreadBytes);
    this.unreadBytes = 0;
  }

  push(item: T): void {
    // An overflowed or failed queue takes nothing more: its consumer gets the error next.
    if (this.failure) return;
    this.items.push(item);
    if (this.meter !== null) {
      const size = this.meter.sizeOf(item);
      this.sizes.push(size);
      this.unreadBytes += size;
      this.meter.changed(size);
    }
    this.notify();
  }

  close(): void {
    this.closed = true;
    this.notify();
  }

  fail(error: unknown): void {
    if (this.failure) return;
    this.failure = error ?? new Error('generation failed');
    this.closed = true;
    this.notify();
  }

  /**
   * The consumer fell too far behind: what it has not read is dropped, and it gets `error`
   * next, after nothing else.
   */
  overflow(error: unknown): void {
    this.items = [];
    this.unwatch();
    this.fail(error);
    // fail() keeps items ahead of the error; there are none left.
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    for (;;) {
      if (this.items.length > 0) {
        const item = this.items.shift() as T;
        if (this.meter !== null) {
          const size = this.sizes.shift() ?? 0;
          this.unreadBytes -= size;
          this.meter.changed(-size);
        }
        yield item;
        continue;
      }
      if (this.failure) throw this.failure;
      if (this.closed) return;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }
}
