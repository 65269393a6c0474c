/**
 * Where a model's processing of a prompt's media parts runs (image resizing, audio
 * features): as one task on the media decoding thread when the pipeline has one
 * (MediaDecoder.runTask, Node), under its deadline; elsewhere here, one part at a time with
 * a yield before each, like inline decoding.
 */
import { yieldToEventLoop } from '../threads/yield.js';
import type { MediaDecoder, MediaThreadTask } from '../media/index.js';
import { MultimodalRequestError } from './types.js';

/**
 * Every part through `here` or, with a thread, the task `threadTask` makes (built only then:
 * it moves the parts' buffers). Throws MultimodalRequestError (the processor's refusals,
 * their parameter kept across the thread), a MediaError 'timeout' past the deadline, or the
 * signal's reason once it aborts.
 */
export async function processParts<Part, Result>(
  parts: readonly Part[],
  here: (part: Part) => Result,
  threadTask: () => MediaThreadTask,
  decoder?: MediaDecoder,
  signal?: AbortSignal,
): Promise<Result[]> {
  if (parts.length === 0) return [];
  if (decoder?.runTask === undefined) {
    const processed: Result[] = [];
    for (const part of parts) {
      await yieldToEventLoop();
      if (signal?.aborted) throw signal.reason;
      processed.push(here(part));
    }
    return processed;
  }
  try {
    return (await decoder.runTask(threadTask(), signal)) as Result[];
  } catch (error) {
    if (error instanceof Error && error.name === 'MultimodalRequestError') {
      throw new MultimodalRequestError(error.message, (error as { param?: string | null }).param ?? null);
    }
    throw error;
  }
}
