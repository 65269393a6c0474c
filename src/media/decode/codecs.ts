/**
 * The pure-JS codecs (jpeg-js; fast-png with its inflate; mp4box) load with the first media
 * request that needs them: together ~4 MiB of a server's resident memory that a text-only
 * deployment (the embedded model, any language model) never uses, and Node never needs
 * mp4box (ffmpeg decodes its video). Every decode path awaits the loader of what it uses
 * before it calls the synchronous decoders, which read pureJsCodec().
 */
import type { decode as decodePng } from 'fast-png';
import type * as Mp4Box from 'mp4box';

type JpegDecode = (typeof import('jpeg-js'))['decode'];

export interface PureJsCodecs {
  decodeJpeg?: JpegDecode;
  decodePng?: typeof decodePng;
  mp4box?: Pick<typeof Mp4Box, 'createFile' | 'MP4BoxBuffer'>;
}

const loaded: PureJsCodecs = {};
let images: Promise<void> | undefined;
let demuxer: Promise<void> | undefined;

/** A failed import is tried again by the next request. */
function once(load: () => Promise<void>, forget: () => void): Promise<void> {
  return load().catch((error: unknown) => {
    forget();
    throw error;
  });
}

/** jpeg-js and fast-png. */
export function loadImageCodecs(): Promise<void> {
  images ??= once(
    () =>
      Promise.all([import('jpeg-js'), import('fast-png')]).then(([jpeg, png]) => {
        // jpeg-js is CommonJS: under Node's ESM loader its functions are on the default export.
        loaded.decodeJpeg = (jpeg as { default?: { decode: JpegDecode } }).default?.decode ?? jpeg.decode;
        loaded.decodePng = png.decode;
      }),
    () => (images = undefined),
  );
  return images;
}

/** mp4box and the JPEG decoder (Motion JPEG frames): the pure-JS video path. */
export function loadVideoCodecs(): Promise<void> {
  demuxer ??= once(
    () =>
      Promise.all([import('mp4box'), loadImageCodecs()]).then(([mp4box]) => {
        loaded.mp4box = { createFile: mp4box.createFile, MP4BoxBuffer: mp4box.MP4BoxBuffer };
      }),
    () => (demuxer = undefined),
  );
  return demuxer;
}

/** One codec, once its loader has resolved. */
export function pureJsCodec<K extends keyof PureJsCodecs>(name: K): NonNullable<PureJsCodecs[K]> {
  const codec = loaded[name];
  if (codec === undefined) throw new Error(`the ${name} decoder ran before its loader (media/decode/codecs.ts) resolved`);
  return codec as NonNullable<PureJsCodecs[K]>;
}
