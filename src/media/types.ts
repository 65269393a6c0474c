/**
 * Shared types of the media pipeline: a request's media part → a checked reference →
 * fetched bytes of a sniffed format → decoded, tensor-ready data.
 */

export type MediaKind = 'image' | 'audio' | 'video';

/** Container/file formats recognised by their magic bytes. */
export type MediaFormat = 'jpeg' | 'png' | 'wav' | 'mp3' | 'flac' | 'mp4' | 'avi' | 'wmv' | 'webm';

/** The formats each kind accepts (the spec's lists, plus WebM/Matroska video). */
export const FORMATS_BY_KIND: Readonly<Record<MediaKind, readonly MediaFormat[]>> = {
  image: ['jpeg', 'png'],
  audio: ['wav', 'mp3', 'flac'],
  video: ['mp4', 'avi', 'wmv', 'webm'],
};

/** Where a part's media comes from, after syntax checks (no I/O yet). */
export type MediaRef =
  /** http: or https: URL, normalised by the WHATWG URL parser. */
  | { type: 'remote'; url: URL }
  /** A base64 `data:` URL. */
  | { type: 'data'; mimeType: string; base64: string }
  /** A local file: a bare path or a file: URL, to be resolved inside the media directory. */
  | { type: 'local'; path: string }
  /** OpenAI `input_audio`: base64 bytes with a declared format. */
  | { type: 'inline'; base64: string; declaredFormat: string };

/** One media part of a request, with the request parameter that names it. */
export interface MediaRequest {
  kind: MediaKind;
  ref: MediaRef;
  /** e.g. "prompt[1].image_url" or "messages[0].content[2].image_url.url". */
  param: string;
  /** The part's type as the client wrote it ("image_url", "input_audio", ...). */
  partType: string;
}

export interface FetchedMedia {
  kind: MediaKind;
  format: MediaFormat;
  bytes: Uint8Array;
  /** How the bytes were obtained. */
  source: MediaRef['type'];
  /** The final URL after redirects (remote only). */
  finalUrl?: string;
  /** The media server's Content-Type, for logs only: the format comes from the bytes. */
  contentType?: string;
}

/** 8-bit RGB, row-major, 3 bytes per pixel, no padding. */
export interface DecodedImage {
  kind: 'image';
  width: number;
  height: number;
  rgb: Uint8Array;
}

/** Mono PCM in [-1, 1] at `sampleRate`. */
export interface DecodedAudio {
  kind: 'audio';
  sampleRate: number;
  samples: Float32Array;
  /** The source's rate before resampling. */
  sourceSampleRate: number;
}

export interface DecodedVideo {
  kind: 'video';
  /** Sampled frames, in presentation order. */
  frames: DecodedImage[];
  /** Presentation time of each frame in seconds. */
  timestamps: number[];
  /** Duration of the video track in seconds. */
  duration: number;
  /** Frames in the whole track (not only the sampled ones). */
  totalFrames: number;
}

export type DecodedMedia = DecodedImage | DecodedAudio | DecodedVideo;

/** A fetched and decoded media part, ready for a multimodal model's processor. */
export interface LoadedMedia {
  param: string;
  kind: MediaKind;
  format: MediaFormat;
  /** Size of the fetched file in bytes. */
  byteLength: number;
  decoded: DecodedMedia;
}
