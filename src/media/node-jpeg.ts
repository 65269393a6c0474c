/**
 * JPEG decoding under Node as PIL decodes it: libjpeg-turbo through sharp (libvips; its
 * prebuilt platform packages come from npm, README dependencies). Measured on files Pillow
 * wrote (test/fixtures/media/jpeg): pixel-identical to Pillow for baseline and progressive
 * 4:2:0, 4:2:2, 4:4:4 and grayscale. CMYK is read as its raw channels and converted with
 * Pillow's own formula (convert("RGB"): r = 255 − k − c·(255 − k)/255, rounded as Pillow
 * does), since libvips would convert through an ICC profile instead.
 * sharp loads on the first JPEG; where its binary is missing the server keeps jpeg-js.
 */
import { createRequire } from 'node:module';
import { MediaError, mediaError } from './errors.js';
import { loadImageCodecs } from './decode/codecs.js';
import { checkPixels, decodeJpegImage, type ImageLimits, type JpegDecoderBackend } from './decode/image.js';
import type { DecodedImage } from './types.js';

type Sharp = typeof import('sharp');

let sharpModule: Sharp | null | undefined;

/** sharp, or null where its native binary is not installed for this platform. */
export function bundledSharp(): Sharp | null {
  if (sharpModule === undefined) {
    try {
      sharpModule = createRequire(import.meta.url)('sharp') as Sharp;
      // One decode per request: libvips' operation cache would only hold on to pixels.
      sharpModule.cache(false);
    } catch {
      sharpModule = null;
    }
  }
  return sharpModule;
}

/** Pillow's CMYK → RGB (Convert.c cmyk2rgb). */
function cmykToRgb(cmyk: Uint8Array, pixels: number): Uint8Array {
  const rgb = new Uint8Array(pixels * 3);
  for (let p = 0; p < pixels; p++) {
    const nk = 255 - cmyk[p * 4 + 3];
    for (let c = 0; c < 3; c++) {
      const t = cmyk[p * 4 + c] * nk + 128;
      rgb[p * 3 + c] = Math.max(0, nk - (((t >> 8) + t) >> 8));
    }
  }
  return rgb;
}

export function createSharpJpegDecoder(sharp: Sharp): JpegDecoderBackend {
  return {
    async decode(bytes: Uint8Array, limits: ImageLimits): Promise<DecodedImage> {
      try {
        const input = () => sharp(bytes, { limitInputPixels: limits.maxPixels, failOn: 'error' });
        // The header first: the size is checked before any pixel buffer exists.
        const { width, height, space } = await input().metadata();
        checkPixels(width ?? 0, height ?? 0, limits);
        if (space === 'cmyk') {
          const { data, info } = await input().pipelineColourspace('cmyk').toColourspace('cmyk').raw().toBuffer({ resolveWithObject: true });
          return { kind: 'image', width: info.width, height: info.height, rgb: cmykToRgb(data, info.width * info.height) };
        }
        const { data, info } = await input().toColourspace('srgb').removeAlpha().raw().toBuffer({ resolveWithObject: true });
        return { kind: 'image', width: info.width, height: info.height, rgb: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) };
      } catch (error) {
        if (error instanceof MediaError) throw error;
        const message = (error as Error).message;
        if (/pixel limit/i.test(message)) throw mediaError('too_large', `the JPEG is larger than the ${limits.maxPixels}-pixel limit`);
        throw mediaError('decode_failed', `the JPEG could not be decoded (${message})`);
      }
    },
  };
}

/** The Node server's JPEG decoder: sharp, loaded with the first JPEG; jpeg-js where sharp's binary is missing. */
export function createNodeJpegDecoder(): JpegDecoderBackend {
  let backend: JpegDecoderBackend | null | undefined;
  return {
    async decode(bytes, limits) {
      if (backend === undefined) {
        const sharp = bundledSharp();
        backend = sharp === null ? null : createSharpJpegDecoder(sharp);
      }
      if (backend !== null) return backend.decode(bytes, limits);
      await loadImageCodecs();
      return decodeJpegImage(bytes, limits);
    },
  };
}
