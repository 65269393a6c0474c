/**
 * Fetched bytes → decoded, tensor-ready data, by the format sniffed from the bytes.
 */
import type { MediaConfig } from '../config.js';
import { MediaError, mediaError } from '../errors.js';
import type { DecodedMedia, FetchedMedia } from '../types.js';
import { decodeAudio } from './audio.js';
import { loadImageCodecs } from './codecs.js';
import { decodeJpegUpright, decodePngImage, type JpegDecoderBackend } from './image.js';
import { decodeVideoWith, type VideoDecoderBackend } from './video.js';
import { defaultVideoFrames, type VideoSampling } from './frame-sampling.js';

export type DecodeOptions = Pick<MediaConfig, 'maxImagePixels' | 'audioSampleRate' | 'maxAudioSeconds' | 'videoFrames'> & {
  /** Decodes every video codec where the runtime has one (Node: ffmpeg); absent: Motion JPEG only. */
  videoDecoder?: VideoDecoderBackend;
  /** Decodes JPEG as libjpeg does where the runtime has it (Node: sharp); absent: jpeg-js. */
  jpegDecoder?: JpegDecoderBackend;
  /** The served model's frame-sampling rule; uniform when absent. */
  videoSampling?: VideoSampling;
  signal?: AbortSignal;
  /** Who asks (the connection's address): a decoding thread takes waiting parts from clients in turn. */
  client?: string;
};

/** Throws MediaError only: a decoder's own exception on hostile input is a 400, not a 500. */
export async function decodeMedia(media: FetchedMedia, options: DecodeOptions): Promise<DecodedMedia> {
  try {
    return await decodeByFormat(media, options);
  } catch (error) {
    if (error instanceof MediaError) throw error;
    const detail = error instanceof Error ? error.message : String(error);
    throw mediaError('decode_failed', `the ${media.format.toUpperCase()} ${media.kind} could not be decoded (${detail})`);
  }
}

async function decodeByFormat(media: FetchedMedia, options: DecodeOptions): Promise<DecodedMedia> {
  const limits = { maxPixels: options.maxImagePixels };
  switch (media.format) {
    case 'jpeg':
      if (options.jpegDecoder === undefined) await loadImageCodecs();
      return decodeJpegUpright(media.bytes, limits, options.jpegDecoder);
    case 'png':
      await loadImageCodecs();
      return decodePngImage(media.bytes, limits);
    case 'wav':
    case 'mp3':
    case 'flac':
      return decodeAudio(media.bytes, media.format, { sampleRate: options.audioSampleRate, maxSeconds: options.maxAudioSeconds });
    case 'mp4':
    case 'avi':
    case 'wmv':
    case 'webm':
      return decodeVideoWith(
        media.bytes,
        media.format,
        { ...limits, frames: options.videoFrames ?? defaultVideoFrames(options.videoSampling), sampling: options.videoSampling },
        options.videoDecoder,
        options.signal,
      );
    default:
      throw mediaError('format_not_allowed', `no decoder for ${String(media.format)}`);
  }
}
