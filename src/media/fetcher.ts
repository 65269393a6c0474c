/**
 * The media fetcher: a checked reference → bytes of a format its kind accepts.
 * Runtime-neutral; Node's DNS pinning, sockets and file system come in through `deps`
 * (see node.ts for the wired-up Node fetcher).
 */
import { createAddressPolicy } from './address-policy.js';
import { decodeCanonicalBase64, decodedBase64Length } from './base64.js';
import { tooLarge } from './body-reader.js';
import type { MediaConfig } from './config.js';
import { MediaError, mediaError } from './errors.js';
import { createHostWhitelist, normaliseHost } from './host-policy.js';
import { requireFormat } from './magic.js';
import { parseMediaRef } from './media-ref.js';
import { fetchRemote, type Resolver, type RemoteFetchPolicy } from './remote-fetch.js';
import { ConnectTimeoutError, createFetchTransport, type Transport } from './transport.js';
import type { FetchedMedia, MediaKind, MediaRef } from './types.js';
import type { VideoDecoderBackend } from './decode/video.js';
import type { MediaDecoder } from './decode/media-decoder.js';
import type { JpegDecoderBackend } from './decode/image.js';

/** Reads a local media file; implementations confine it to the media directory. */
export interface LocalFileReader {
  /** `path` as the client wrote it (absolute, or relative to the media directory). */
  read(path: string, maxBytes: number, what: string, signal: AbortSignal): Promise<Uint8Array>;
}

export interface MediaFetcherDeps {
  /**
   * DNS resolution whose answers are checked; absent: the runtime resolves (fetch API)
   * unchecked. Only with a transport that pins the address (node-transport.ts) is the
   * checked address the one connected to; with the fetch API a rebinding window remains.
   */
  resolve?: Resolver;
  /** How to connect; default: the fetch API over `fetchImpl`. */
  transport?: Transport;
  fetchImpl?: typeof fetch;
  /** Local files; absent: local paths and file: URLs are refused. */
  localFiles?: LocalFileReader;
  /** Decodes every video codec (Node: ffmpeg); absent: Motion JPEG only. */
  videoDecoder?: VideoDecoderBackend;
  /** Where images and audio are decoded (Node: a worker thread); absent: on this thread, yielding first. */
  decoder?: MediaDecoder;
  /** Decodes JPEG as libjpeg / PIL does (Node: sharp); absent: jpeg-js. */
  jpegDecoder?: JpegDecoderBackend;
}

export interface MediaFetcher {
  /** Throws MediaError on any refusal, or the caller's abort reason when `signal` aborts. */
  fetch(ref: MediaRef | string, kind: MediaKind, signal?: AbortSignal): Promise<FetchedMedia>;
  readonly config: MediaConfig;
  readonly videoDecoder?: VideoDecoderBackend;
  readonly decoder?: MediaDecoder;
  readonly jpegDecoder?: JpegDecoderBackend;
}

function withDeadline(callerSignal: AbortSignal | undefined, timeoutMs: number) {
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new Error(`media fetch timed out after ${timeoutMs} ms`));
  }, timeoutMs);
  const onAbort = () => controller.abort(callerSignal?.reason);
  if (callerSignal?.aborted) onAbort();
  else callerSignal?.addEventListener('abort', onAbort, { once: true });
  return {
    signal: controller.signal,
    timedOut: () => timedOut,
    dispose() {
      clearTimeout(timer);
      callerSignal?.removeEventListener('abort', onAbort);
    },
  };
}

function decodeInlineBase64(base64: string, cap: number, what: string): Uint8Array {
  if (decodedBase64Length(base64) > cap) throw tooLarge(what, cap, decodedBase64Length(base64));
  return decodeCanonicalBase64(base64);
}

export function createMediaFetcher(config: MediaConfig, deps: MediaFetcherDeps = {}): MediaFetcher {
  const policy: RemoteFetchPolicy = {
    whitelist: createHostWhitelist(config.allowedDomains),
    addresses: createAddressPolicy(config.allowPrivateAddresses),
    extraRefusedSuffixes: config.extraRefusedDomainSuffixes.map((s) => normaliseHost(s.replace(/^\*?\./, '')) ?? s.toLowerCase()),
    resolve: deps.resolve,
    transport: deps.transport ?? createFetchTransport(deps.fetchImpl),
    maxRedirects: config.maxRedirects,
    connectTimeoutMs: config.connectTimeoutMs,
  };

  async function load(ref: MediaRef, kind: MediaKind, signal: AbortSignal): Promise<Omit<FetchedMedia, 'format' | 'kind'>> {
    const cap = config.maxBytes[kind];
    const what = `${kind} file`;
    switch (ref.type) {
      case 'data':
      case 'inline':
        return { bytes: decodeInlineBase64(ref.base64, cap, what), source: ref.type };
      case 'local':
        if (deps.localFiles === undefined) {
          throw mediaError('local_files_unavailable', 'local media files cannot be read in this runtime; use an http(s) or data: URL');
        }
        return { bytes: await deps.localFiles.read(ref.path, cap, what, signal), source: 'local' };
      case 'remote': {
        const body = await fetchRemote(ref.url, cap, what, policy, signal);
        return { bytes: body.bytes, source: 'remote', finalUrl: body.finalUrl, contentType: body.contentType };
      }
    }
  }

  return {
    config,
    videoDecoder: deps.videoDecoder,
    decoder: deps.decoder,
    jpegDecoder: deps.jpegDecoder,
    async fetch(refOrText, kind, callerSignal) {
      const ref = typeof refOrText === 'string' ? parseMediaRef(refOrText, kind) : refOrText;
      const deadline = withDeadline(callerSignal, config.totalTimeoutMs);
      try {
        const loaded = await load(ref, kind, deadline.signal);
        return { ...loaded, kind, format: requireFormat(loaded.bytes, kind) };
      } catch (error) {
        if (callerSignal?.aborted) throw callerSignal.reason;
        if (error instanceof MediaError) throw error;
        if (deadline.timedOut()) throw mediaError('timeout', `fetching the ${kind} took longer than ${config.totalTimeoutMs} ms`);
        if (error instanceof ConnectTimeoutError) {
          throw mediaError('timeout', `connecting to the media server took longer than ${error.timeoutMs} ms`);
        }
        const detail = error instanceof Error ? error.message : String(error);
        throw mediaError('fetch_failed', `the ${kind} could not be fetched (${detail})`);
      } finally {
        deadline.dispose();
      }
    },
  };
}
