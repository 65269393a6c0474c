/**
 * MP4/MOV demuxing with mp4box (GPAC's ISO-BMFF parser in TypeScript): the sample
 * tables (stts/ctts/stsc/stsz/stco, fragments) resolved to byte ranges and times.
 */
import type { Movie } from 'mp4box';
import { mediaError } from '../errors.js';
import { pureJsCodec } from './codecs.js';
import type { DemuxedVideo } from './demuxed-video.js';

/** mp4box loads on first use: await loadVideoCodecs() (codecs.ts) first. */
export function demuxMp4(bytes: Uint8Array): DemuxedVideo {
  const { createFile, MP4BoxBuffer } = pureJsCodec('mp4box');
  const file = createFile();
  let movie: Movie | undefined;
  let parseError: string | undefined;
  file.onReady = (info) => {
    movie = info;
  };
  file.onError = (module, message) => {
    parseError ??= `${module}: ${message}`;
  };
  try {
    // mp4box keeps the buffer; give it a copy it may own.
    file.appendBuffer(MP4BoxBuffer.fromArrayBuffer(bytes.slice().buffer, 0));
    file.flush();
  } catch (error) {
    parseError ??= (error as Error).message;
  }
  if (movie === undefined) {
    throw mediaError('decode_failed', `the MP4 could not be parsed${parseError === undefined ? ' (no moov box)' : ` (${parseError})`}`);
  }
  const track = movie.videoTracks[0];
  if (track === undefined) throw mediaError('decode_failed', 'the MP4 has no video track');
  const samples = file.getTrackSamplesInfo(track.id);
  const frames = samples
    .map((s) => ({ offset: s.offset, size: s.size, time: s.cts / s.timescale, end: (s.cts + s.duration) / s.timescale }))
    .sort((a, b) => a.time - b.time);
  for (const frame of frames) {
    if (frame.offset < 0 || frame.offset + frame.size > bytes.length) {
      throw mediaError('decode_failed', 'the MP4 sample table points past the end of the file (truncated download?)');
    }
  }
  const trackDuration = track.timescale > 0 ? track.duration / track.timescale : 0;
  return {
    container: 'MP4',
    codec: track.codec,
    width: track.video?.width ?? track.track_width,
    height: track.video?.height ?? track.track_height,
    duration: Math.max(trackDuration, frames.at(-1)?.end ?? 0),
    frames: frames.map(({ offset, size, time }) => ({ offset, size, time })),
  };
}
