/**
 * Image resizing exactly as Pillow's Image.resize does it for 8-bit RGB, because the
 * image processors of transformers (the "slow" ones every VLM's reference numbers come
 * from) resize with Pillow: a separable convolution, horizontal pass first, with each
 * output pixel's filter weights normalised, quantised to 22-bit fixed point, and the
 * intermediate image rounded back to 8 bits. Matching that bit for bit keeps pixel values
 * identical to transformers' for the same decoded image.
 */
import type { DecodedImage } from '../media/index.js';

/** Pillow's resampling filters by their enum value (PIL.Image.Resampling), as preprocessor_config.json's "resample" gives them. */
export const PIL_FILTERS = {
  1: 'lanczos',
  2: 'bilinear',
  3: 'bicubic',
  4: 'box',
  5: 'hamming',
} as const;
export type PilFilterName = (typeof PIL_FILTERS)[keyof typeof PIL_FILTERS];

interface Filter {
  support: number;
  weight(x: number): number;
}

function sinc(x: number): number {
  if (x === 0) return 1;
  const px = x * Math.PI;
  return Math.sin(px) / px;
}

const FILTERS: Record<PilFilterName, Filter> = {
  box: { support: 0.5, weight: (x) => (x > -0.5 && x <= 0.5 ? 1 : 0) },
  bilinear: {
    support: 1,
    weight: (x) => {
      const a = Math.abs(x);
      return a < 1 ? 1 - a : 0;
    },
  },
  hamming: {
    support: 1,
    weight: (x) => {
      const a = Math.abs(x);
      if (a === 0) return 1;
      if (a >= 1) return 0;
      const px = a * Math.PI;
      return (Math.sin(px) / px) * (0.54 + 0.46 * Math.cos(px));
    },
  },
  bicubic: {
    support: 2,
    weight: (x) => {
      const a = -0.5;
      const t = Math.abs(x);
      if (t < 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
      if (t < 2) return (((t - 5) * t + 8) * t - 4) * a;
      return 0;
    },
  },
  lanczos: { support: 3, weight: (x) => (x >= -3 && x < 3 ? sinc(x) * sinc(x / 3) : 0) },
};

const PRECISION_BITS = 32 - 8 - 2;
const ONE = 2 ** PRECISION_BITS;

interface Coefficients {
  /** Per output pixel: first input pixel and how many follow. */
  first: Int32Array;
  count: Int32Array;
  /** [outSize, kernelSize] fixed-point weights. */
  weights: Int32Array;
  kernelSize: number;
}

/** Pillow's precompute_coeffs + normalize_coeffs_8bpc for one axis (no crop box). */
function coefficients(inSize: number, outSize: number, filter: Filter): Coefficients {
  const scale = inSize / outSize;
  const filterScale = Math.max(scale, 1);
  const support = filter.support * filterScale;
  const kernelSize = Math.ceil(support) * 2 + 1;
  const first = new Int32Array(outSize);
  const count = new Int32Array(outSize);
  const weights = new Int32Array(outSize * kernelSize);
  const row = new Float64Array(kernelSize);
  for (let out = 0; out < outSize; out++) {
    const center = (out + 0.5) * scale;
    const inverse = 1 / filterScale;
    // C's (int) cast truncates toward zero.
    const min = Math.max(0, Math.trunc(center - support + 0.5));
    const max = Math.min(inSize, Math.trunc(center + support + 0.5)) - min;
    let total = 0;
    for (let i = 0; i < max; i++) {
      const w = filter.weight((i + min - center + 0.5) * inverse);
      row[i] = w;
      total += w;
    }
    for (let i = 0; i < kernelSize; i++) {
      const w = i < max ? (total !== 0 ? row[i] / total : row[i]) : 0;
      weights[out * kernelSize + i] = w < 0 ? Math.trunc(-0.5 + w * ONE) : Math.trunc(0.5 + w * ONE);
    }
    first[out] = min;
    count[out] = max;
  }
  return { first, count, weights, kernelSize };
}

function clip8(sum: number): number {
  const value = Math.floor(sum / ONE);
  return value < 0 ? 0 : value > 255 ? 255 : value;
}

/** One pass along x (horizontal) of an RGB image. */
function resampleHorizontal(src: Uint8Array, width: number, height: number, outWidth: number, filter: Filter): Uint8Array {
  const { first, count, weights, kernelSize } = coefficients(width, outWidth, filter);
  const out = new Uint8Array(outWidth * height * 3);
  for (let y = 0; y < height; y++) {
    const rowIn = y * width * 3;
    const rowOut = y * outWidth * 3;
    for (let x = 0; x < outWidth; x++) {
      let r = ONE / 2;
      let g = ONE / 2;
      let b = ONE / 2;
      const start = first[x];
      const k = x * kernelSize;
      for (let i = 0; i < count[x]; i++) {
        const w = weights[k + i];
        const p = rowIn + (start + i) * 3;
        r += src[p] * w;
        g += src[p + 1] * w;
        b += src[p + 2] * w;
      }
      const o = rowOut + x * 3;
      out[o] = clip8(r);
      out[o + 1] = clip8(g);
      out[o + 2] = clip8(b);
    }
  }
  return out;
}

/** One pass along y (vertical). */
function resampleVertical(src: Uint8Array, width: number, height: number, outHeight: number, filter: Filter): Uint8Array {
  const { first, count, weights, kernelSize } = coefficients(height, outHeight, filter);
  const out = new Uint8Array(width * outHeight * 3);
  const stride = width * 3;
  for (let y = 0; y < outHeight; y++) {
    const start = first[y];
    const k = y * kernelSize;
    for (let x = 0; x < stride; x++) {
      let sum = ONE / 2;
      for (let i = 0; i < count[y]; i++) sum += src[(start + i) * stride + x] * weights[k + i];
      out[y * stride + x] = clip8(sum);
    }
  }
  return out;
}

/** Image.resize((width, height), resample=filter) of an RGB image; the same size returns the image itself, as Pillow copies it. */
export function resizeRgb(image: DecodedImage, width: number, height: number, filterName: PilFilterName): DecodedImage {
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1) {
    throw new Error(`cannot resize an image to ${width}x${height}`);
  }
  if (image.width === width && image.height === height) return image;
  const filter = FILTERS[filterName];
  let rgb = image.rgb;
  let currentWidth = image.width;
  if (width !== image.width) {
    rgb = resampleHorizontal(rgb, image.width, image.height, width, filter);
    currentWidth = width;
  }
  if (height !== image.height) rgb = resampleVertical(rgb, currentWidth, image.height, height, filter);
  return { kind: 'image', width, height, rgb };
}

/** The pixels of [left, left + width) × [top, top + height). */
export function cropRgb(image: DecodedImage, left: number, top: number, width: number, height: number): DecodedImage {
  const rgb = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++) {
    const from = ((top + y) * image.width + left) * 3;
    rgb.set(image.rgb.subarray(from, from + width * 3), y * width * 3);
  }
  return { kind: 'image', width, height, rgb };
}

/**
 * Channels-first float pixels: value × rescale, then (value − mean) / std per channel,
 * in float32 as transformers' numpy pipeline computes them.
 */
export function normalizeToChw(
  image: DecodedImage,
  options: { rescale: number | null; mean: readonly number[] | null; std: readonly number[] | null },
  out: Float32Array = new Float32Array(3 * image.width * image.height),
  offset = 0,
): Float32Array {
  const plane = image.width * image.height;
  // transformers rescales in float64 and casts to float32, then normalises in float32.
  const rescale = options.rescale ?? 1;
  for (let c = 0; c < 3; c++) {
    const mean = Math.fround(options.mean?.[c] ?? 0);
    const std = Math.fround(options.std?.[c] ?? 1);
    for (let i = 0; i < plane; i++) {
      let value = image.rgb[i * 3 + c];
      if (options.rescale !== null) value = Math.fround(value * rescale);
      if (options.mean !== null) value = Math.fround(Math.fround(value - mean) / std);
      out[offset + c * plane + i] = value;
    }
  }
  return out;
}
