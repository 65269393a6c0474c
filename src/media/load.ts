/**
 * What the serving layer calls: every media part of a request validated, fetched and
 * decoded, or one ProtocolError (a MediaError, 400) naming the part at fault.
 *
 * Parts are fetched a few at a time; the first refusal aborts the others and waits for
 * them to wind down, so a refused request leaves no download running behind it.
 */
import { MediaError, mediaError } from './errors.js';
import { decodeMedia } from './decode/index.js';
import type { MediaFetcher } from './fetcher.js';
import { mediaRequestsFromMessages, mediaRequestsFromPrompt } from './parse-part.js';
import type { LoadedMedia, MediaKind, MediaRequest } from './types.js';
import type { VideoSampling } from './decode/frame-sampling.js';

export interface LoadMediaOptions {
  /** The client's request signal: aborting it stops every fetch (and rejects with its reason). */
  signal?: AbortSignal;
  /** Parts fetched at once. */
  concurrency?: number;
  /** The served model's frame-sampling rule (SmolVLM: by fps); uniform when absent. */
  videoSampling?: VideoSampling;
}

const DEFAULT_CONCURRENCY = 4;

async function loadOne(request: MediaRequest, fetcher: MediaFetcher, signal: AbortSignal, videoSampling?: VideoSampling): Promise<LoadedMedia> {
  try {
    const fetched = await fetcher.fetch(request.ref, request.kind, signal);
    const decoded = await decodeMedia(fetched, { ...fetcher.config, videoDecoder: fetcher.videoDecoder, jpegDecoder: fetcher.jpegDecoder, videoSampling, signal });
    return { param: request.param, kind: request.kind, format: fetched.format, byteLength: fetched.bytes.byteLength, decoded };
  } catch (error) {
    if (error instanceof MediaError) throw error.forParam(request.param);
    throw error;
  }
}

/** Fetches and decodes already-parsed media requests, in order. */
export async function loadMediaRequests(
  requests: readonly MediaRequest[],
  fetcher: MediaFetcher,
  options: LoadMediaOptions = {},
): Promise<LoadedMedia[]> {
  const limit = fetcher.config.maxPartsPerRequest;
  if (requests.length > limit) {
    const extra = requests[limit];
    throw mediaError('too_many_parts', `${extra.param}: a request may carry at most ${limit} media parts, got ${requests.length}`, extra.param);
  }
  const controller = new AbortController();
  const onAbort = () => controller.abort(options.signal?.reason);
  if (options.signal?.aborted) onAbort();
  else options.signal?.addEventListener('abort', onAbort, { once: true });

  const results: LoadedMedia[] = new Array(requests.length);
  const failures: { index: number; error: unknown }[] = [];
  let next = 0;
  const worker = async () => {
    while (next < requests.length && !controller.signal.aborted) {
      const index = next++;
      try {
        results[index] = await loadOne(requests[index], fetcher, controller.signal, options.videoSampling);
      } catch (error) {
        failures.push({ index, error });
        controller.abort(error);
      }
    }
  };
  try {
    const workers = Math.max(1, Math.min(options.concurrency ?? DEFAULT_CONCURRENCY, requests.length));
    await Promise.all(Array.from({ length: workers }, worker));
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
  }
  if (options.signal?.aborted) throw options.signal.reason;
  if (failures.length > 0) {
    // The refusal that caused the abort, not the siblings it cancelled.
    const cause = failures.find((f) => f.error instanceof MediaError) ?? failures[0];
    throw cause.error;
  }
  return results;
}

/** A MindIE /generate prompt list (or any list of parts); `prefix` names it in errors. */
export function loadPromptMedia(parts: readonly unknown[], fetcher: MediaFetcher, options: LoadMediaOptions & { prefix?: string } = {}) {
  return loadMediaRequests(mediaRequestsFromPrompt(parts, options.prefix), fetcher, options);
}

/** The content parts of OpenAI chat messages. */
export function loadChatMedia(messages: readonly unknown[], fetcher: MediaFetcher, options: LoadMediaOptions = {}) {
  return loadMediaRequests(mediaRequestsFromMessages(messages), fetcher, options);
}

/**
 * For a model that takes `accepted` kinds only (none for a text-only model): refuses the
 * first loaded part of another kind with a 400 that says the media itself was fine.
 */
export function refuseUnacceptedMedia(loaded: readonly LoadedMedia[], accepted: readonly MediaKind[] = []): void {
  const first = loaded.find((m) => !accepted.includes(m.kind));
  if (first === undefined) return;
  const what = accepted.length === 0 ? 'text only' : `${accepted.join(' and ')} input only`;
  throw mediaError(
    'modality_not_supported',
    `${first.param}: this model accepts ${what}; the ${first.kind} was fetched and decoded, but the model cannot use it`,
    first.param,
  );
}
