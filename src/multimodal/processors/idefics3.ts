/**
 * Idefics3 / SmolVLM: the image processor and prompt expansion of transformers'
 * Idefics3ImageProcessor and Idefics3Processor, rule for rule.
 *
 * Image: RGB; resize (Pillow, `resample`) so the longest edge is size.longest_edge, the
 * other edge from the aspect ratio rounded up to even, both capped at 4096; with
 * do_image_splitting, resize again so both edges are multiples of max_image_size.longest_edge
 * (the tile), cut into rows × cols tiles row by row, then append the whole image resized
 * to one tile (the global image); without splitting, the image resized to one tile alone.
 * Each frame is rescaled and normalised with the config's mean and std. Every frame is
 * one tile in size, so padding adds nothing and the pixel attention mask is all ones.
 *
 * Prompt: each `<image>` becomes, for a split image, per row and column
 * `<fake_token_around_image><row_r_col_c>` + `<image>` × image_seq_len, a newline after
 * each row, then `\n<fake_token_around_image><global-img>` + `<image>` × image_seq_len +
 * `<fake_token_around_image>`; for an unsplit image only the global part.
 */
import type { DecodedImage, DecodedVideo, VideoSampling } from '../../media/index.js';
import { englishNumber } from '../english-number.js';
import {
  boolField,
  channelsField,
  configError,
  numberField,
  positiveIntField,
  resampleField,
  sizeField,
  tokenIdOf,
  type JsonObject,
} from '../config-fields.js';
import { cropRgb, normalizeToChw, resizeRgb, type PilFilterName } from '../pil-resample.js';
import type { Idefics3Settings } from './settings.js';
import type { ImageProcessor, ImageProcessorSpec, MultimodalLimits, ProcessedImage } from '../types.js';
import { MultimodalRequestError } from '../types.js';

/** transformers' absolute cap on a resized edge (4k). */
const MAX_IMAGE_SIZE = 4096;
const IMAGENET_STANDARD = [0.5, 0.5, 0.5];
const FAKE_TOKEN = '<fake_token_around_image>';
const IMAGE_TOKEN = '<image>';
const GLOBAL_IMAGE_TOKEN = '<global-img>';


export function idefics3Settings(config: JsonObject, preprocessor: JsonObject, processor: JsonObject): Idefics3Settings {
  const file = 'preprocessor_config.json';
  const vision = (config.vision_config ?? {}) as JsonObject;
  let imageSeqLen: number;
  if (processor.image_seq_len !== undefined) {
    imageSeqLen = positiveIntField(processor, 'image_seq_len', undefined, 'processor_config.json');
  } else {
    // Idefics3Processor's own rule when processor_config.json leaves it out.
    const side = positiveIntField(vision, 'image_size', 364, 'config.json vision_config') / positiveIntField(vision, 'patch_size', 14, 'config.json vision_config');
    const scale = numberField(config, 'scale_factor', 2, 'config.json');
    imageSeqLen = Math.trunc((side * side) / (scale * scale));
  }
  const doRescale = boolField(preprocessor, 'do_rescale', true);
  const doNormalize = boolField(preprocessor, 'do_normalize', true);
  const settings: Idefics3Settings = {
    doResize: boolField(preprocessor, 'do_resize', true),
    longestEdge: sizeField(preprocessor, 'size', 'longest_edge', 4 * 364, file),
    resample: resampleField(preprocessor, 1, file),
    doImageSplitting: boolField(preprocessor, 'do_image_splitting', true),
    tile: sizeField(preprocessor, 'max_image_size', 'longest_edge', 364, file),
    rescale: doRescale ? numberField(preprocessor, 'rescale_factor', 1 / 255, file) : null,
    mean: doNormalize ? channelsField(preprocessor, 'image_mean', IMAGENET_STANDARD, file) : null,
    std: doNormalize ? channelsField(preprocessor, 'image_std', IMAGENET_STANDARD, file) : null,
    imageSeqLen,
  };
  if (settings.longestEdge > MAX_IMAGE_SIZE) throw configError(file, `"size.longest_edge" ${settings.longestEdge} is above ${MAX_IMAGE_SIZE}`);
  return settings;
}

/** Idefics3's resize to the longest edge: the short edge from the aspect ratio, rounded up to even, then the 4096 cap. */
export function idefics3ResizedSize(height: number, width: number, longestEdge: number): { height: number; width: number } {
  let h = height;
  let w = width;
  let aspect = w / h;
  if (w >= h) {
    w = longestEdge;
    h = Math.trunc(w / aspect);
    if (h % 2 !== 0) h += 1;
  } else {
    h = longestEdge;
    w = Math.trunc(h * aspect);
    if (w % 2 !== 0) w += 1;
  }
  h = Math.max(h, 1);
  w = Math.max(w, 1);
  aspect = w / h;
  if (w >= h && w > MAX_IMAGE_SIZE) {
    w = MAX_IMAGE_SIZE;
    h = Math.trunc(w / aspect);
  } else if (h > w && h > MAX_IMAGE_SIZE) {
    h = MAX_IMAGE_SIZE;
    w = Math.trunc(h * aspect);
  }
  return { height: Math.max(h, 1), width: Math.max(w, 1) };
}

/** Both edges rounded up to multiples of the tile, the second from the aspect ratio (resize_for_vision_encoder). */
export function idefics3TiledSize(height: number, width: number, tile: number): { height: number; width: number } {
  const aspect = width / height;
  let h = height;
  let w = width;
  if (w >= h) {
    w = Math.ceil(w / tile) * tile;
    h = Math.trunc(w / aspect);
    h = Math.ceil(h / tile) * tile;
  } else {
    h = Math.ceil(h / tile) * tile;
    w = Math.trunc(h * aspect);
    w = Math.ceil(w / tile) * tile;
  }
  return { height: h, width: w };
}

/** The text standing for an image of rows × cols tiles (0 × 0: not split). */
export function idefics3PromptText(rows: number, cols: number, imageSeqLen: number): string {
  const imageTokens = IMAGE_TOKEN.repeat(imageSeqLen);
  const global = `${FAKE_TOKEN}${GLOBAL_IMAGE_TOKEN}${imageTokens}${FAKE_TOKEN}`;
  if (rows === 0 && cols === 0) return global;
  let text = '';
  for (let r = 1; r <= rows; r++) {
    for (let c = 1; c <= cols; c++) text += `${FAKE_TOKEN}<row_${r}_col_${c}>${imageTokens}`;
    text += '\n';
  }
  return `${text}\n${global}`;
}

/**
 * SmolVLM's video prompt (SmolVLMProcessor): an intro naming the frame count in words and
 * the duration as H:MM:SS, then per frame "\nFrame from MM:SS:" and the frame as a single
 * (unsplit) image, then "\n\n".
 */
export function smolvlmVideoPromptText(timestamps: readonly number[], duration: number, imageSeqLen: number): string {
  const seconds = Math.trunc(duration);
  const hms = `${Math.trunc(seconds / 3600)}:${String(Math.trunc(seconds / 60) % 60).padStart(2, '0')}:${String(seconds % 60).padStart(2, '0')}`;
  let text = `You are provided the following series of ${englishNumber(timestamps.length)} frames from a ${hms} [H:MM:SS] video.\n`;
  for (const time of timestamps) {
    const stamp = `${String(Math.trunc(time / 60)).padStart(2, '0')}:${String(Math.trunc(time % 60)).padStart(2, '0')}`;
    text += `\nFrame from ${stamp}:` + idefics3PromptText(0, 0, imageSeqLen);
  }
  return text + '\n\n';
}

/**
 * SmolVLM's `video_sampling` ({"fps": 1, "max_frames": 64, ...} in SmolVLM2's
 * preprocessor_config.json): frames by fps, as SmolVLMVideoProcessor.sample_frames.
 * Absent: frames evenly spread (MEDIA_VIDEO_FRAMES).
 */
export function smolvlmVideoSampling(preprocessor: JsonObject, processor: JsonObject): VideoSampling {
  const source = (preprocessor.video_sampling ?? processor.video_sampling) as JsonObject | undefined;
  if (source === undefined || source === null || typeof source !== 'object') return { rule: 'uniform' };
  const file = 'preprocessor_config.json video_sampling';
  const fps = numberField(source, 'fps', undefined, file);
  if (fps <= 0) throw configError(file, `"fps" must be above 0, got ${fps}`);
  return { rule: 'fps', fps, maxFrames: positiveIntField(source, 'max_frames', undefined, file) };
}

export class Idefics3Processor implements ImageProcessor {
  readonly family: 'idefics3' | 'smolvlm';
  readonly placeholder = IMAGE_TOKEN;
  readonly videoPlaceholder?: string;
  readonly videoSampling?: VideoSampling;

  constructor(
    readonly settings: Idefics3Settings,
    readonly imageTokenId: number,
    video: VideoSampling | false = false,
  ) {
    this.family = video !== false ? 'smolvlm' : 'idefics3';
    // SmolVLM (not Idefics3) takes video: its template writes <video> for a video part.
    if (video !== false) {
      this.videoPlaceholder = '<video>';
      this.videoSampling = video;
    }
  }

  static create(
    files: { config: JsonObject; preprocessorConfig: JsonObject; processorConfig: JsonObject },
    tokenToId: (token: string) => number | undefined,
    video = false,
  ): Idefics3Processor {
    const settings = idefics3Settings(files.config, files.preprocessorConfig, files.processorConfig);
    const imageTokenId = tokenIdOf(tokenToId, IMAGE_TOKEN, 'Idefics3');
    tokenIdOf(tokenToId, FAKE_TOKEN, 'Idefics3');
    tokenIdOf(tokenToId, GLOBAL_IMAGE_TOKEN, 'Idefics3');
    if (settings.doImageSplitting) {
      // The most tiles a resized image can have along an edge.
      const maxSplits = Math.ceil(settings.longestEdge / settings.tile);
      for (let r = 1; r <= maxSplits; r++) for (let c = 1; c <= maxSplits; c++) tokenIdOf(tokenToId, `<row_${r}_col_${c}>`, 'Idefics3');
    }
    const configured = files.config.image_token_id;
    if (typeof configured === 'number' && configured !== imageTokenId) {
      throw new Error(`config.json "image_token_id" is ${configured}, but the tokenizer's "${IMAGE_TOKEN}" is ${imageTokenId}.`);
    }
    return new Idefics3Processor(settings, imageTokenId, video ? smolvlmVideoSampling(files.preprocessorConfig, files.processorConfig) : false);
  }

  get spec(): ImageProcessorSpec {
    return { family: 'idefics3', settings: this.settings, imageTokenId: this.imageTokenId, video: this.videoSampling ?? false };
  }

  /**
   * Each sampled frame (sampled by `videoSampling` when decoded) resized to one tile
   * (Pillow, the image filter) and normalised like an image. transformers' SmolVLM video
   * processor resizes with torch's antialiased bicubic instead (to video_size, then to
   * the tile): pixel values of video frames are close to, not equal to, transformers'.
   */
  processVideo(video: DecodedVideo, param: string, limits: MultimodalLimits): ProcessedImage {
    const { tile, resample } = this.settings;
    if (video.frames.length > limits.maxImagesPerPrompt * limits.maxImageTiles) {
      throw new MultimodalRequestError(`${param}: ${video.frames.length} frames are more than this server takes per video.`, param);
    }
    const plane = 3 * tile * tile;
    const pixels = new Float32Array(video.frames.length * plane);
    video.frames.forEach((frame, index) => normalizeToChw(resizeRgb(frame, tile, tile, resample), this.settings, pixels, index * plane));
    return {
      param,
      pixels,
      frames: video.frames.length,
      height: tile,
      width: tile,
      promptText: smolvlmVideoPromptText(video.timestamps, video.duration, this.settings.imageSeqLen),
      imageTokens: video.frames.length * this.settings.imageSeqLen,
    };
  }

  /**
   * The sizes `process` resizes an image to and its tile grid (0 × 0: not split), from the
   * image's size alone; refuses a grid past MEDIA_MAX_IMAGE_TILES.
   */
  private layout(height: number, width: number, param: string, limits: MultimodalLimits) {
    const { settings } = this;
    const resized = settings.doResize ? idefics3ResizedSize(height, width, settings.longestEdge) : { height, width };
    if (!settings.doImageSplitting) return { resized, tiled: null, rows: 0, cols: 0 };
    const tiled = idefics3TiledSize(resized.height, resized.width, settings.tile);
    if (tiled.height <= settings.tile && tiled.width <= settings.tile) return { resized, tiled, rows: 0, cols: 0 };
    const rows = Math.ceil(tiled.height / settings.tile);
    const cols = Math.ceil(tiled.width / settings.tile);
    if (rows * cols + 1 > limits.maxImageTiles) {
      throw new MultimodalRequestError(
        `${param}: the image becomes ${rows} x ${cols} tiles plus the global image, more than the ${limits.maxImageTiles} frames an image may have (MEDIA_MAX_IMAGE_TILES).`,
        param,
      );
    }
    return { resized, tiled, rows, cols };
  }

  /** Per tile a marker, a row/col token and the image tokens; the global image two markers, its token and the image tokens. */
  declaredPromptTokens(width: number, height: number, param: string, limits: MultimodalLimits): number {
    const { rows, cols } = this.layout(height, width, param, limits);
    const seq = this.settings.imageSeqLen;
    return rows * cols * (seq + 2) + seq + 3;
  }

  process(image: DecodedImage, param: string, limits: MultimodalLimits): ProcessedImage {
    const { settings } = this;
    const { tile, resample } = settings;
    const { resized, tiled, rows, cols } = this.layout(image.height, image.width, param, limits);
    let current = image;
    if (settings.doResize) current = resizeRgb(current, resized.width, resized.height, resample);
    const frames: DecodedImage[] = [];
    if (tiled !== null) {
      current = resizeRgb(current, tiled.width, tiled.height, resample);
      if (rows > 0) {
        const tileHeight = Math.ceil(current.height / rows);
        const tileWidth = Math.ceil(current.width / cols);
        for (let r = 0; r < rows; r++) {
          for (let c = 0; c < cols; c++) {
            const left = c * tileWidth;
            const top = r * tileHeight;
            const right = Math.min(left + tileWidth, current.width);
            const bottom = Math.min(top + tileHeight, current.height);
            frames.push(cropRgb(current, left, top, right - left, bottom - top));
          }
        }
        frames.push(resizeRgb(current, tile, tile, resample));
      } else {
        frames.push(current);
      }
    } else {
      frames.push(resizeRgb(current, tile, tile, resample));
    }
    const { height, width } = frames[0];
    if (!frames.every((frame) => frame.height === height && frame.width === width)) {
      // Only a config without resizing gets here (tiles are one size otherwise); padding
      // to a common size is not implemented.
      throw new MultimodalRequestError(`${param}: this model's image settings give frames of different sizes, which the server does not pad.`, param);
    }
    const plane = 3 * height * width;
    const pixels = new Float32Array(frames.length * plane);
    frames.forEach((frame, index) => normalizeToChw(frame, settings, pixels, index * plane));
    return {
      param,
      pixels,
      frames: frames.length,
      height,
      width,
      promptText: idefics3PromptText(rows, cols, settings.imageSeqLen),
      imageTokens: (rows * cols + 1) * settings.imageSeqLen,
    };
  }
}
