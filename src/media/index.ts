/**
 * Multimodal prompt media: parsing of prompt parts, the secure fetcher, validation by
 * magic bytes and decoding to tensor-ready data. Runtime-neutral; Node wiring (DNS
 * pinning, local files, disk-space check) is in ./node.js. Rules: docs/media.md.
 */
export type { MediaKind, MediaFormat, MediaRef, MediaRequest, FetchedMedia, DecodedImage, DecodedAudio, DecodedVideo, DecodedMedia, LoadedMedia } from './types.js';
export { FORMATS_BY_KIND } from './types.js';
export { MediaError, type MediaRefusalReason } from './errors.js';
export { DEFAULT_MEDIA_CONFIG, DEFAULT_MEDIA_DIR, mediaConfigFromEnv, resolveMediaConfig, type MediaConfig, type MediaConfigInput } from './config.js';
export { parseMediaPart, mediaRequestsFromPrompt, mediaRequestsFromMessages, type ParsedPart } from './parse-part.js';
export { parseMediaRef } from './media-ref.js';
export { createMediaFetcher, type MediaFetcher, type MediaFetcherDeps, type LocalFileReader } from './fetcher.js';
export { createFetchTransport, type Transport, type TransportRequest, type TransportResponse } from './transport.js';
export type { Resolver } from './remote-fetch.js';
export { WILDCARD_DNS_SUFFIXES } from './host-policy.js';
export { sniffFormat } from './magic.js';
export { decodeMedia, type DecodeOptions } from './decode/index.js';
export type { VideoDecoderBackend, VideoFormat, VideoOptions } from './decode/video.js';
export type { VideoSampling } from './decode/frame-sampling.js';
export { loadMediaRequests, loadPromptMedia, loadChatMedia, refuseUnacceptedMedia, type LoadMediaOptions, type DeclaredPart } from './load.js';
export { declaredSize, type DeclaredSize } from './decode/declared-size.js';
export { decoderForClient, inlineMediaDecoder, movableViews, type MediaDecoder, type MediaThreadTask } from './decode/media-decoder.js';
