/**
 * JPEG and PNG → 8-bit RGB. Pure JS (jpeg-js, fast-png), so it runs in every runtime.
 * The pixel count is checked from the header before any pixel buffer is allocated
 * (decompression bombs: a tiny PNG can declare 100000×100000). Alpha is dropped, as
 * PIL's convert("RGB") does; a JPEG's EXIF orientation is applied as transformers' load_image does.
 * The decoders load on first use: await loadImageCodecs() (codecs.ts) before calling these.
 */
import type { DecodedPng } from 'fast-png';
import { mediaError } from '../errors.js';
import type { DecodedImage } from '../types.js';
import { pureJsCodec } from './codecs.js';
import { applyExifOrientation, jpegExifOrientation } from './exif-orientation.js';

export interface ImageLimits {
  maxPixels: number;
}

export function checkPixels(width: number, height: number, limits: ImageLimits): void {
  if (width <= 0 || height <= 0) throw mediaError('decode_failed', `the image has an invalid size ${width}×${height}`);
  if (width * height > limits.maxPixels) {
    throw mediaError('too_large', `the image is ${width}×${height} pixels, more than the ${limits.maxPixels}-pixel limit`);
  }
}

function pngHeaderSize(bytes: Uint8Array): { width: number; height: number } {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const chunkType = String.fromCharCode(...bytes.subarray(12, 16));
  if (bytes.length < 24 || chunkType !== 'IHDR') throw mediaError('decode_failed', 'the PNG has no IHDR header');
  return { width: view.getUint32(16), height: view.getUint32(20) };
}

/** Samples of one row-major channel stream scaled to 0..255, whatever the bit depth. */
function sampleReader(png: DecodedPng): (sampleIndex: number, y: number) => number {
  const { data, depth, width, channels } = png;
  if (depth === 16) return (i) => (data[i] as number) >> 8;
  if (depth === 8) return (i) => data[i] as number;
  // 1, 2 and 4 bits: rows are packed and padded to whole bytes.
  const rowSamples = width * channels;
  const rowBytes = Math.ceil((rowSamples * depth) / 8);
  const max = (1 << depth) - 1;
  return (i, y) => {
    const inRow = i - y * rowSamples;
    const bit = inRow * depth;
    const byte = data[y * rowBytes + (bit >> 3)] as number;
    return (byte >> (8 - depth - (bit & 7))) & max;
  };
}

function pngToRgb(png: DecodedPng): Uint8Array {
  const { width, height, channels, palette, depth } = png;
  const read = sampleReader(png);
  const rgb = new Uint8Array(width * height * 3);
  const scaleGray = palette === undefined && depth < 8 ? 255 / ((1 << depth) - 1) : 1;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const pixel = y * width + x;
      const first = pixel * channels;
      const out = pixel * 3;
      if (palette !== undefined) {
        const color = palette[read(first, y)];
        if (color === undefined) throw mediaError('decode_failed', 'the PNG uses a palette index outside its palette');
        rgb[out] = color[0];
        rgb[out + 1] = color[1];
        rgb[out + 2] = color[2];
      } else if (channels <= 2) {
        const gray = Math.round(read(first, y) * scaleGray);
        rgb[out] = rgb[out + 1] = rgb[out + 2] = gray;
      } else {
        rgb[out] = read(first, y);
        rgb[out + 1] = read(first + 1, y);
        rgb[out + 2] = read(first + 2, y);
      }
    }
  }
  return rgb;
}

export function decodePngImage(bytes: Uint8Array, limits: ImageLimits): DecodedImage {
  const { width, height } = pngHeaderSize(bytes);
  checkPixels(width, height, limits);
  let png: DecodedPng;
  try {
    png = pureJsCodec('decodePng')(bytes);
  } catch (error) {
    throw mediaError('decode_failed', `the PNG could not be decoded (${(error as Error).message})`);
  }
  return { kind: 'image', width, height, rgb: pngToRgb(png) };
}

/**
 * A JPEG decoder a runtime brings (Node: libjpeg-turbo through sharp, node-jpeg.ts), which
 * decodes as PIL does; without one, jpeg-js (its chroma upsampling and IDCT differ from
 * libjpeg's: up to ~130 levels at colour edges of 4:2:0 / 4:2:2 files, ±3 on 4:4:4).
 */
export interface JpegDecoderBackend {
  /** RGB pixels as stored (no EXIF orientation); throws MediaError. */
  decode(bytes: Uint8Array, limits: ImageLimits): Promise<DecodedImage>;
}

/** A JPEG as transformers' load_image gives it: decoded, then turned upright by its EXIF orientation. */
export async function decodeJpegUpright(bytes: Uint8Array, limits: ImageLimits, backend?: JpegDecoderBackend): Promise<DecodedImage> {
  const decoded = backend !== undefined ? await backend.decode(bytes, limits) : decodeJpegImage(bytes, limits);
  return applyExifOrientation(decoded, jpegExifOrientation(bytes));
}

export function decodeJpegImage(bytes: Uint8Array, limits: ImageLimits): DecodedImage {
  let image: { width: number; height: number; data: Uint8Array };
  try {
    image = pureJsCodec('decodeJpeg')(bytes, {
      useTArray: true,
      formatAsRGBA: false,
      maxResolutionInMP: limits.maxPixels / 1e6,
      // RGB output plus the decoder's per-component planes, with headroom.
      maxMemoryUsageInMB: Math.ceil((limits.maxPixels * 8) / (1024 * 1024)) + 64,
    });
  } catch (error) {
    const message = (error as Error).message;
    if (/limit exceeded/.test(message)) throw mediaError('too_large', `the JPEG is larger than the ${limits.maxPixels}-pixel limit`);
    throw mediaError('decode_failed', `the JPEG could not be decoded (${message})`);
  }
  checkPixels(image.width, image.height, limits);
  return { kind: 'image', width: image.width, height: image.height, rgb: image.data };
}
