/**
 * Media configuration: the spec's defaults (40 MB images and audio, 512 MB video, media
 * directory /data/multimodal_inputs/, remote hosts only from ALLOWED_MEDIA_DOMAINS_ENV)
 * plus this server's own limits. Pure: `mediaConfigFromEnv` takes the environment as an
 * argument. docs/media.md lists every variable.
 */
import type { MediaKind } from './types.js';
import { createHostWhitelist } from './host-policy.js';
import { createAddressPolicy, type PrivateAddressExemption } from './address-policy.js';

const MiB = 1024 * 1024;

export interface MediaConfig {
  /** ALLOWED_MEDIA_DOMAINS_ENV entries (see host-policy.ts for the matching rules). Empty: no remote media. */
  allowedDomains: readonly string[];
  /** Local media files must resolve inside this directory. */
  mediaDir: string;
  /**
   * Connections to loopback/private/reserved addresses are refused unless exempted here:
   * true for all, or a list of CIDR ranges. Whitelisting a private IP is not enough.
   */
  allowPrivateAddresses: PrivateAddressExemption;
  /** Size cap per kind, in bytes (the spec's "40 MB" read as MiB). */
  maxBytes: Readonly<Record<MediaKind, number>>;
  /** Time to establish the TCP connection of one hop (Node transport only). */
  connectTimeoutMs: number;
  /** Time for the whole fetch: every redirect hop and the full body. */
  totalTimeoutMs: number;
  /** Redirects followed before giving up. */
  maxRedirects: number;
  /** Wildcard-DNS suffixes refused on top of the built-in list. */
  extraRefusedDomainSuffixes: readonly string[];
  /** Media parts one request may carry. */
  maxPartsPerRequest: number;
  /** Largest decoded image (width × height); bigger ones are refused before decoding. */
  maxImagePixels: number;
  /** Sample rate decoded audio is resampled to (16 kHz: Whisper-style audio encoders). */
  audioSampleRate: number;
  /** Longest decoded audio in seconds (bounds the PCM buffer of a compressed file). */
  maxAudioSeconds: number;
  /**
   * Frames sampled from a video at most (MEDIA_VIDEO_FRAMES). Unset: the model's rule alone
   * (SmolVLM's video processor: fps and max_frames), or 16 evenly spread for other families.
   */
  videoFrames?: number;
  /** Time for decoding one video, both ffmpeg passes (Node); the process is killed after. */
  videoDecodeTimeoutMs: number;
  /** Images one prompt may carry, for a vision-language model (MEDIA_MAX_IMAGES_PER_PROMPT). */
  maxImagesPerPrompt: number;
  /** Frames one image may become: tiles plus the global image (MEDIA_MAX_IMAGE_TILES). */
  maxImageTiles: number;
  /** Seconds of audio one prompt may carry, for an audio-language model (MEDIA_MAX_AUDIO_SECONDS_PER_PROMPT). */
  maxAudioSecondsPerPrompt: number;
  /** Pixels all image parts of one request may declare together, judged from their headers before decoding (MEDIA_MAX_PIXELS_PER_REQUEST). */
  maxPixelsPerRequest: number;
  /** Seconds of audio all parts of one request may declare together, before decoding: each second becomes audioSampleRate samples (MEDIA_MAX_AUDIO_SECONDS_PER_REQUEST). */
  maxAudioSecondsPerRequest: number;
  /** Time for decoding one image or audio part (or processing a request's images or audio features) off the event loop; the decoding worker is stopped after (MEDIA_DECODE_TIMEOUT_MS). */
  decodeTimeoutMs: number;
}

export const DEFAULT_MEDIA_DIR = '/data/multimodal_inputs/';

export const DEFAULT_MEDIA_CONFIG: MediaConfig = {
  allowedDomains: [],
  mediaDir: DEFAULT_MEDIA_DIR,
  allowPrivateAddresses: false,
  maxBytes: { image: 40 * MiB, audio: 40 * MiB, video: 512 * MiB },
  connectTimeoutMs: 10_000,
  totalTimeoutMs: 120_000,
  maxRedirects: 3,
  extraRefusedDomainSuffixes: [],
  maxPartsPerRequest: 16,
  maxImagePixels: 40_000_000,
  audioSampleRate: 16_000,
  maxAudioSeconds: 1_800,
  videoDecodeTimeoutMs: 60_000,
  maxImagesPerPrompt: 8,
  maxImageTiles: 26,
  maxAudioSecondsPerPrompt: 120,
  maxPixelsPerRequest: 50_000_000,
  maxAudioSecondsPerRequest: 1_800,
  decodeTimeoutMs: 20_000,
};

export type MediaConfigInput = Partial<Omit<MediaConfig, 'maxBytes'>> & { maxBytes?: Partial<Record<MediaKind, number>> };

function positiveInt(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value <= 0) throw new Error(`media config: ${name} must be a positive integer, got ${value}`);
  return value;
}

/** Defaults filled in and every field checked; throws on a bad value (a start-up error). */
export function resolveMediaConfig(input: MediaConfigInput = {}): MediaConfig {
  const config: MediaConfig = {
    ...DEFAULT_MEDIA_CONFIG,
    ...Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined)),
    maxBytes: { ...DEFAULT_MEDIA_CONFIG.maxBytes, ...input.maxBytes },
  };
  for (const kind of ['image', 'audio', 'video'] as const) positiveInt(`maxBytes.${kind}`, config.maxBytes[kind]);
  positiveInt('connectTimeoutMs', config.connectTimeoutMs);
  positiveInt('totalTimeoutMs', config.totalTimeoutMs);
  if (!Number.isSafeInteger(config.maxRedirects) || config.maxRedirects < 0) {
    throw new Error(`media config: maxRedirects must be an integer >= 0, got ${config.maxRedirects}`);
  }
  positiveInt('maxPartsPerRequest', config.maxPartsPerRequest);
  positiveInt('maxImagePixels', config.maxImagePixels);
  positiveInt('audioSampleRate', config.audioSampleRate);
  positiveInt('maxAudioSeconds', config.maxAudioSeconds);
  if (config.videoFrames !== undefined) positiveInt('videoFrames', config.videoFrames);
  positiveInt('videoDecodeTimeoutMs', config.videoDecodeTimeoutMs);
  positiveInt('maxImagesPerPrompt', config.maxImagesPerPrompt);
  positiveInt('maxImageTiles', config.maxImageTiles);
  positiveInt('maxAudioSecondsPerPrompt', config.maxAudioSecondsPerPrompt);
  positiveInt('maxPixelsPerRequest', config.maxPixelsPerRequest);
  positiveInt('maxAudioSecondsPerRequest', config.maxAudioSecondsPerRequest);
  positiveInt('decodeTimeoutMs', config.decodeTimeoutMs);
  if (config.mediaDir.trim() === '') throw new Error('media config: mediaDir must not be empty');
  // Parse now so a bad entry stops the server at start-up, not the first request.
  createHostWhitelist(config.allowedDomains);
  createAddressPolicy(config.allowPrivateAddresses);
  return config;
}

type Env = Readonly<Record<string, string | undefined>>;

function list(value: string | undefined): string[] {
  return (value ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '');
}

function intVar(env: Env, name: string): number | undefined {
  const text = env[name]?.trim();
  if (text === undefined || text === '') return undefined;
  if (!/^[0-9]+$/.test(text)) throw new Error(`${name} must be a positive integer, got "${text}"`);
  return Number(text);
}

function mebibytesVar(env: Env, name: string): number | undefined {
  const mib = intVar(env, name);
  return mib === undefined ? undefined : mib * MiB;
}

function privateAddressesVar(value: string | undefined): PrivateAddressExemption | undefined {
  const text = value?.trim();
  if (text === undefined || text === '') return undefined;
  if (text === 'true') return true;
  if (text === 'false') return false;
  return list(text);
}

/**
 * ALLOWED_MEDIA_DOMAINS_ENV (the spec's whitelist) and this server's MEDIA_* variables:
 * MEDIA_DIR, MEDIA_ALLOW_PRIVATE_ADDRESSES ("true" or a comma list of CIDRs),
 * MEDIA_MAX_IMAGE_MB / MEDIA_MAX_AUDIO_MB / MEDIA_MAX_VIDEO_MB (MiB),
 * MEDIA_CONNECT_TIMEOUT_MS, MEDIA_TIMEOUT_MS, MEDIA_MAX_REDIRECTS,
 * MEDIA_REFUSED_DOMAIN_SUFFIXES, MEDIA_MAX_PARTS, MEDIA_VIDEO_FRAMES, MEDIA_VIDEO_DECODE_TIMEOUT_MS, MEDIA_AUDIO_SAMPLE_RATE,
 * MEDIA_MAX_IMAGES_PER_PROMPT, MEDIA_MAX_IMAGE_TILES, MEDIA_MAX_AUDIO_SECONDS_PER_PROMPT,
 * MEDIA_MAX_PIXELS_PER_REQUEST, MEDIA_MAX_AUDIO_SECONDS_PER_REQUEST, MEDIA_DECODE_TIMEOUT_MS.
 */
export function mediaConfigFromEnv(env: Env, base: MediaConfigInput = {}): MediaConfig {
  return resolveMediaConfig({
    ...base,
    allowedDomains: env.ALLOWED_MEDIA_DOMAINS_ENV !== undefined ? list(env.ALLOWED_MEDIA_DOMAINS_ENV) : base.allowedDomains,
    mediaDir: env.MEDIA_DIR?.trim() || base.mediaDir,
    allowPrivateAddresses: privateAddressesVar(env.MEDIA_ALLOW_PRIVATE_ADDRESSES) ?? base.allowPrivateAddresses,
    maxBytes: {
      ...base.maxBytes,
      ...definedOnly({
        image: mebibytesVar(env, 'MEDIA_MAX_IMAGE_MB'),
        audio: mebibytesVar(env, 'MEDIA_MAX_AUDIO_MB'),
        video: mebibytesVar(env, 'MEDIA_MAX_VIDEO_MB'),
      }),
    },
    connectTimeoutMs: intVar(env, 'MEDIA_CONNECT_TIMEOUT_MS') ?? base.connectTimeoutMs,
    totalTimeoutMs: intVar(env, 'MEDIA_TIMEOUT_MS') ?? base.totalTimeoutMs,
    maxRedirects: intVar(env, 'MEDIA_MAX_REDIRECTS') ?? base.maxRedirects,
    extraRefusedDomainSuffixes:
      env.MEDIA_REFUSED_DOMAIN_SUFFIXES !== undefined ? list(env.MEDIA_REFUSED_DOMAIN_SUFFIXES) : base.extraRefusedDomainSuffixes,
    maxPartsPerRequest: intVar(env, 'MEDIA_MAX_PARTS') ?? base.maxPartsPerRequest,
    videoFrames: intVar(env, 'MEDIA_VIDEO_FRAMES') ?? base.videoFrames,
    videoDecodeTimeoutMs: intVar(env, 'MEDIA_VIDEO_DECODE_TIMEOUT_MS') ?? base.videoDecodeTimeoutMs,
    audioSampleRate: intVar(env, 'MEDIA_AUDIO_SAMPLE_RATE') ?? base.audioSampleRate,
    maxImagesPerPrompt: intVar(env, 'MEDIA_MAX_IMAGES_PER_PROMPT') ?? base.maxImagesPerPrompt,
    maxImageTiles: intVar(env, 'MEDIA_MAX_IMAGE_TILES') ?? base.maxImageTiles,
    maxAudioSecondsPerPrompt: intVar(env, 'MEDIA_MAX_AUDIO_SECONDS_PER_PROMPT') ?? base.maxAudioSecondsPerPrompt,
    maxPixelsPerRequest: intVar(env, 'MEDIA_MAX_PIXELS_PER_REQUEST') ?? base.maxPixelsPerRequest,
    maxAudioSecondsPerRequest: intVar(env, 'MEDIA_MAX_AUDIO_SECONDS_PER_REQUEST') ?? base.maxAudioSecondsPerRequest,
    decodeTimeoutMs: intVar(env, 'MEDIA_DECODE_TIMEOUT_MS') ?? base.decodeTimeoutMs,
  });
}

function definedOnly<T extends object>(obj: T): Partial<T> {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined)) as Partial<T>;
}
