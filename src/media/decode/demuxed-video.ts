/**
 * What a video demuxer hands the frame sampler: the video track's codec and the byte
 * ranges of its frames in presentation order.
 */
export interface VideoFrameRef {
  /** Byte range in the file. */
  offset: number;
  size: number;
  /** Presentation time in seconds. */
  time: number;
}

export interface DemuxedVideo {
  container: 'MP4' | 'AVI' | 'WMV';
  /** Codec identifier as the container writes it (MP4 codec string, AVI FourCC). */
  codec: string;
  width: number;
  height: number;
  /** Seconds. */
  duration: number;
  frames: VideoFrameRef[];
}

const CODEC_NAMES: readonly [RegExp, string][] = [
  [/^(avc1|avc3|h264|x264|davc)/i, 'H.264/AVC'],
  [/^(hvc1|hev1|hevc|h265)/i, 'H.265/HEVC'],
  [/^(vvc1|vvi1)/i, 'H.266/VVC'],
  [/^av01/i, 'AV1'],
  [/^vp09/i, 'VP9'],
  [/^vp08/i, 'VP8'],
  [/^(mp4v|xvid|divx|dx50|fmp4)/i, 'MPEG-4 Part 2'],
  [/^(mpg2|mpeg|mp2v)/i, 'MPEG-2'],
  [/^(wmv|wvc1)/i, 'Windows Media Video'],
];

/** A readable name for a codec identifier ("avc1.64001f" → "H.264/AVC (avc1.64001f)"). */
export function describeCodec(codec: string): string {
  const name = CODEC_NAMES.find(([pattern]) => pattern.test(codec))?.[1];
  return name === undefined ? `"${codec}"` : `${name} (${codec})`;
}
