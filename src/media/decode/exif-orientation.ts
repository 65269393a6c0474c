/**
 * EXIF orientation, applied as transformers' load_image does (PIL.ImageOps.exif_transpose):
 * a JPEG whose APP1 Exif block says the camera was turned is turned back before processing,
 * so the model sees the picture upright, as users do. Only JPEG carries it here (PNG's eXIf
 * chunk is rare and left alone).
 */
import type { DecodedImage } from '../types.js';

/** The orientation tag (1–8) of a JPEG's first Exif block; 1 (upright) when there is none or it cannot be read. */
export function jpegExifOrientation(bytes: Uint8Array): number {
  let at = 2; // after SOI
  while (at + 4 <= bytes.length && bytes[at] === 0xff) {
    const marker = bytes[at + 1];
    // Start of scan: the metadata segments are all before it.
    if (marker === 0xda || marker === 0xd9) return 1;
    const length = (bytes[at + 2] << 8) | bytes[at + 3];
    if (length < 2) return 1;
    if (marker === 0xe1 && length >= 16 && String.fromCharCode(...bytes.subarray(at + 4, at + 10)) === 'Exif\0\0') {
      return tiffOrientation(bytes.subarray(at + 10, at + 2 + length));
    }
    at += 2 + length;
  }
  return 1;
}

function tiffOrientation(tiff: Uint8Array): number {
  if (tiff.length < 8) return 1;
  const little = tiff[0] === 0x49 && tiff[1] === 0x49;
  if (!little && !(tiff[0] === 0x4d && tiff[1] === 0x4d)) return 1;
  const view = new DataView(tiff.buffer, tiff.byteOffset, tiff.byteLength);
  const ifd = view.getUint32(4, little);
  if (ifd + 2 > tiff.length) return 1;
  const entries = view.getUint16(ifd, little);
  for (let i = 0; i < entries; i++) {
    const entry = ifd + 2 + i * 12;
    if (entry + 12 > tiff.length) return 1;
    if (view.getUint16(entry, little) !== 0x0112) continue;
    const value = view.getUint16(entry + 8, little); // SHORT, stored in the value field
    return value >= 1 && value <= 8 ? value : 1;
  }
  return 1;
}

/** The image turned upright for an EXIF orientation (ImageOps.exif_transpose's transposes). */
export function applyExifOrientation(image: DecodedImage, orientation: number): DecodedImage {
  if (orientation <= 1 || orientation > 8) return image;
  const { width: w, height: h, rgb } = image;
  const swaps = orientation >= 5;
  const outWidth = swaps ? h : w;
  const outHeight = swaps ? w : h;
  // Source pixel of output (x, y) for each orientation.
  const source: Record<number, (x: number, y: number) => [number, number]> = {
    2: (x, y) => [w - 1 - x, y], // FLIP_LEFT_RIGHT
    3: (x, y) => [w - 1 - x, h - 1 - y], // ROTATE_180
    4: (x, y) => [x, h - 1 - y], // FLIP_TOP_BOTTOM
    5: (x, y) => [y, x], // TRANSPOSE
    6: (x, y) => [y, h - 1 - x], // ROTATE_270 (90° clockwise)
    7: (x, y) => [w - 1 - y, h - 1 - x], // TRANSVERSE
    8: (x, y) => [w - 1 - y, x], // ROTATE_90 (90° counter-clockwise)
  };
  const from = source[orientation];
  const out = new Uint8Array(rgb.length);
  for (let y = 0; y < outHeight; y++) {
    for (let x = 0; x < outWidth; x++) {
      const [sx, sy] = from(x, y);
      const s = (sy * w + sx) * 3;
      const d = (y * outWidth + x) * 3;
      out[d] = rgb[s];
      out[d + 1] = rgb[s + 1];
      out[d + 2] = rgb[s + 2];
    }
  }
  return { ...image, width: outWidth, height: outHeight, rgb: out };
}
