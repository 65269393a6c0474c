import type { DeltaQueue } from './delta-queue.js';
import { EngineOutputUnreadError } from './errors.js';
import type { GenerationDelta } from './types.js';

/**
 * Output generated for clients that have not read it yet. The step loop never waits for a
 * consumer (delta-queue.ts), so a stream whose client stops reading keeps everything its
 * generation makes: the audit's n = 32 streams with logprobs held 13–25 MB each, and the
 * server grew without bound. Each stream may keep `maxStreamUnreadBytes` unread, all
 * together `maxUnreadBytesTotal`; past either, the stream that holds most is overflowed:
 * its unread output dropped, its generation stopped, its client sent the error event.
 *
 * A client that reads keeps about one step's deltas unread (its consumer runs between
 * steps), a few KB even for n = 32 with 20 logprobs each.
 */
export interface UnreadOutputLimits {
  maxStreamUnreadBytes: number;
  maxUnreadBytesTotal: number;
}

/** Heap bytes of a delta, roughly as V8 holds it: its fields, text, ids and logprob objects. */
export function deltaBytes(delta: GenerationDelta): number {
  let bytes = 160 + 2 * delta.text.length + 8 * delta.tokenIds.length + 8 * delta.logprobs.length;
  if (delta.topLogprobs !== undefined) {
    for (const alternatives of delta.topLogprobs) bytes += 32 + 48 * alternatives.length;
  }
  // Prompt logprobs are one array shared by every sequence's first delta, bounded by the
  // prompt (and sent first): they are not output that grows while the client does not read.
  return bytes;
}

interface Tracked {
  queue: DeltaQueue<GenerationDelta>;
  stop(): void;
}

export class UnreadOutputBudget {
  private total = 0;
  private readonly tracked = new Set<Tracked>();

  constructor(private readonly limits: UnreadOutputLimits) {}

  /** Bytes unread over every stream. */
  get unreadBytes(): number {
    return this.total;
  }

  /**
   * Counts `queue`'s unread output from now on; past a bound it is overflowed and `stop`
   * runs (the engine ends its generation). Returns what to call once its consumer is done.
   */
  track(queue: DeltaQueue<GenerationDelta>, stop: () => void): () => void {
    const entry: Tracked = { queue, stop };
    this.tracked.add(entry);
    queue.watch({
      sizeOf: deltaBytes,
      changed: (bytes) => {
        this.total += bytes;
        if (bytes > 0) this.enforce(entry);
      },
    });
    return () => {
      this.tracked.delete(entry);
      queue.unwatch();
    };
  }

  private enforce(grown: Tracked): void {
    const { maxStreamUnreadBytes, maxUnreadBytesTotal } = this.limits;
    if (grown.queue.unreadBytes > maxStreamUnreadBytes) {
      this.overflow(
        grown,
        `The stream was ended: its client left more than ${formatBytes(maxStreamUnreadBytes)} of output unread (maxStreamUnreadBytes). Read the stream as it arrives.`,
      );
    }
    while (this.total > maxUnreadBytesTotal && this.tracked.size > 0) {
      let largest: Tracked | null = null;
      for (const entry of this.tracked) if (largest === null || entry.queue.unreadBytes > largest.queue.unreadBytes) largest = entry;
      if (largest === null || largest.queue.unreadBytes === 0) break;
      this.overflow(
        largest,
        `The stream was ended: the server's streams hold ${formatBytes(maxUnreadBytesTotal)} of unread output (maxUnreadBytesTotal) and this one's client had left the most unread. Read the stream as it arrives.`,
      );
    }
  }

  private overflow(entry: Tracked, message: string): void {
    this.tracked.delete(entry);
    entry.queue.overflow(new EngineOutputUnreadError(message));
    entry.stop();
  }
}

function formatBytes(bytes: number): string {
  if (bytes >= 1 << 20 && bytes % (1 << 20) === 0) return `${bytes / (1 << 20)} MiB`;
  if (bytes >= 1 << 10 && bytes % (1 << 10) === 0) return `${bytes / (1 << 10)} KiB`;
  return `${bytes} bytes`;
}
