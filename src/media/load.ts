/**
 * What the serving layer calls: every media part of a request validated, fetched and
 * decoded, or one ProtocolError (a MediaError, 400) naming the part at fault.
 *
 * Parts are fetched a few at a time; the first refusal aborts the others and waits for
 * them to wind down, so a refused request leaves no download running behind it. Nothing
 * is decoded before every part's header has been read and judged (declared-size.ts).
 */
import { MediaError, mediaError } from './errors.js';
import { declaredSize, type DeclaredSize } from './decode/declared-size.js';
import { inlineMediaDecoder } from './decode/media-decoder.js';
import type { MediaConfig } from './config.js';
import type { MediaFetcher } from './fetcher.js';
import { mediaRequestsFromMessages, mediaRequestsFromPrompt } from './parse-part.js';
import type { FetchedMedia, LoadedMedia, MediaKind, MediaRequest } from './types.js';
import type { VideoSampling } from './decode/frame-sampling.js';

/** A fetched part, its format checked and its header read, not yet decoded. */
export interface DeclaredPart {
  param: string;
  kind: MediaKind;
  declared: DeclaredSize;
}

export interface LoadMediaOptions {
  /** The client's request signal: aborting it stops every fetch (and rejects with its reason). */
  signal?: AbortSignal;
  /** Parts fetched at once. */
  concurrency?: number;
  /** The served model's frame-sampling rule (SmolVLM: by fps); uniform when absent. */
  videoSampling?: VideoSampling;
  /**
   * Sees what every part declares once all are fetched, before any is decoded, and throws
   * to refuse the request: the served model's own rules (a text-only model takes no media;
   * a vision-language model's image tokens must fit the context).
   */
  admit?: (parts: readonly DeclaredPart[]) => void;
  /** Who asks (the connection's address): a decoding thread takes waiting parts from clients in turn. */
  client?: string;
}

const DEFAULT_CONCURRENCY = 4;

function attributed<T>(param: string, work: () => Promise<T>): Promise<T> {
  return work().catch((error: unknown) => {
    throw error instanceof MediaError ? error.forParam(param) : error;
  });
}

/**
 * Runs `work` over `items`, a few at a time; the first failure aborts the rest and waits
 * for them to wind down, then is thrown (a MediaError in preference to the aborts it caused).
 */
async function eachPart<T, R>(
  items: readonly T[],
  concurrency: number,
  callerSignal: AbortSignal | undefined,
  work: (item: T, signal: AbortSignal) => Promise<R>,
): Promise<R[]> {
  const controller = new AbortController();
  const onAbort = () => controller.abort(callerSignal?.reason);
  if (callerSignal?.aborted) onAbort();
  else callerSignal?.addEventListener('abort', onAbort, { once: true });
  const results: R[] = new Array(items.length);
  const failures: unknown[] = [];
  let next = 0;
  const worker = async () => {
    while (next < items.length && !controller.signal.aborted) {
      const index = next++;
      try {
        results[index] = await work(items[index], controller.signal);
      } catch (error) {
        failures.push(error);
        controller.abort(error);
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, items.length)) }, worker));
  } finally {
    callerSignal?.removeEventListener('abort', onAbort);
  }
  if (callerSignal?.aborted) throw callerSignal.reason;
  if (failures.length > 0) throw failures.find((error) => error instanceof MediaError) ?? failures[0];
  return results;
}

/** One part's declared size against the per-part limits (the decoders check again, for files that lie). */
function checkDeclared(declared: DeclaredSize, config: MediaConfig): void {
  if (declared.kind === 'image' && declared.width * declared.height > config.maxImagePixels) {
    throw mediaError(
      'too_large',
      `the image declares ${declared.width}×${declared.height} pixels, more than the ${config.maxImagePixels}-pixel limit; it was not decoded`,
    );
  }
  if (declared.kind === 'audio' && declared.seconds !== null && declared.seconds > config.maxAudioSeconds) {
    throw mediaError('too_large', `the audio declares ${declared.seconds.toFixed(1)} s, more than the ${config.maxAudioSeconds} s limit; it was not decoded`);
  }
}

/** The request's totals: pixels over its images, seconds (samples once resampled) over its audio. */
function checkRequestTotals(parts: readonly DeclaredPart[], config: MediaConfig): void {
  let pixels = 0;
  let seconds = 0;
  for (const part of parts) {
    const { declared } = part;
    if (declared.kind === 'image') {
      pixels += declared.width * declared.height;
      if (pixels > config.maxPixelsPerRequest) {
        throw mediaError(
          'too_large',
          `${part.param}: the request's images declare ${pixels} pixels up to this part, more than the ${config.maxPixelsPerRequest} pixels a request may carry (MEDIA_MAX_PIXELS_PER_REQUEST); nothing was decoded`,
          part.param,
        );
      }
    } else if (declared.kind === 'audio' && declared.seconds !== null) {
      seconds += declared.seconds;
      if (seconds > config.maxAudioSecondsPerRequest) {
        throw mediaError(
          'too_large',
          `${part.param}: the request's audio declares ${seconds.toFixed(1)} s up to this part (${Math.ceil(seconds * config.audioSampleRate)} samples at ${config.audioSampleRate} Hz), more than the ${config.maxAudioSecondsPerRequest} s a request may carry (MEDIA_MAX_AUDIO_SECONDS_PER_REQUEST); nothing was decoded`,
          part.param,
        );
      }
    }
  }
}

/**
 * Fetches and decodes already-parsed media requests, in order: every part fetched and its
 * header read first, the request's totals and `admit` judged from the headers, and only
 * then anything decoded (off the event loop where the fetcher has a decoding thread).
 */
export async function loadMediaRequests(
  requests: readonly MediaRequest[],
  fetcher: MediaFetcher,
  options: LoadMediaOptions = {},
): Promise<LoadedMedia[]> {
  const { config } = fetcher;
  const limit = config.maxPartsPerRequest;
  if (requests.length > limit) {
    const extra = requests[limit];
    throw mediaError('too_many_parts', `${extra.param}: a request may carry at most ${limit} media parts, got ${requests.length}`, extra.param);
  }
  const fetched = await eachPart(requests, options.concurrency ?? DEFAULT_CONCURRENCY, options.signal, (request, signal) =>
    attributed(request.param, async () => {
      const media = await fetcher.fetch(request.ref, request.kind, signal);
      const declared = declaredSize(media.bytes, media.format);
      checkDeclared(declared, config);
      return { request, media, declared };
    }),
  );
  const declared = fetched.map(({ request, declared }): DeclaredPart => ({ param: request.param, kind: request.kind, declared }));
  checkRequestTotals(declared, config);
  options.admit?.(declared);

  const decoder = fetcher.decoder ?? inlineMediaDecoder;
  const decodeOptions = { ...config, videoDecoder: fetcher.videoDecoder, jpegDecoder: fetcher.jpegDecoder, videoSampling: options.videoSampling };
  // One part at a time: a decoding thread takes one anyway, and peak memory stays one part's.
  return eachPart(fetched, 1, options.signal, ({ request, media }: { request: MediaRequest; media: FetchedMedia }, signal) =>
    attributed(request.param, async () => {
      const decoded = await decoder.decode(media, { ...decodeOptions, signal, client: options.client });
      return { param: request.param, kind: request.kind, format: media.format, byteLength: media.bytes.byteLength, decoded };
    }),
  );
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
 * first part of another kind with a 400 that says the media itself was fine. Run on the
 * declared parts (LoadMediaOptions.admit), so nothing the model cannot use is decoded.
 */
export function refuseUnacceptedMedia(parts: readonly Pick<DeclaredPart, 'param' | 'kind'>[], accepted: readonly MediaKind[] = []): void {
  const first = parts.find((m) => !accepted.includes(m.kind));
  if (first === undefined) return;
  const what = accepted.length === 0 ? 'text only' : `${accepted.join(' and ')} input only`;
  throw mediaError(
    'modality_not_supported',
    `${first.param}: this model accepts ${what}; the ${first.kind} was fetched and its header checked (not decoded), but the model cannot use it`,
    first.param,
  );
}
