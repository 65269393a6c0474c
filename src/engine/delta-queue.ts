/**
 * Hands one sequence's deltas from the step loop to the request that consumes them.
 * The loop never waits for a consumer: a slow client only lets its own queue grow (by
 * at most max_tokens entries), it never stalls the batch.
 */
export class DeltaQueue<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  private closed = false;
  private failure: unknown = null;
  private wake: (() => void) | null = null;

  push(item: T): void {
    this.items.push(item);
    this.notify();
  }

  close(): void {
    this.closed = true;
    this.notify();
  }

  fail(error: unknown): void {
    this.failure = error ?? new Error('generation failed');
    this.closed = true;
    this.notify();
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    for (;;) {
      if (this.items.length > 0) {
        yield this.items.shift() as T;
        continue;
      }
      if (this.failure) throw this.failure;
      if (this.closed) return;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }
}
