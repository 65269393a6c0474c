/**
 * The pipeline of a vision-language model, between decoded media and the engine:
 * a family's image processor turns each image into pixel values and the text that stands
 * for it in the prompt; the vision encoder turns the pixel values into features; the
 * engine splices those in at the image tokens. A family (processors/) is one file.
 */
import type { DecodedImage, DecodedVideo, VideoSampling } from '../media/index.js';
import type { Idefics3Settings, LlavaSettings } from './processors/settings.js';

/** An image or video of a prompt, with the request parameter it came from. */
export type PromptImage = { param: string; image: DecodedImage; video?: undefined } | { param: string; video: DecodedVideo; image?: undefined };

/** One image after the family's processor. */
export interface ProcessedImage {
  /** The request parameter it came from (for errors). */
  param: string;
  /** Channels-first float32 frames, [frames, 3, height, width] (tiles and the global image, or one image). */
  pixels: Float32Array;
  frames: number;
  height: number;
  width: number;
  /** Text that replaces the image's placeholder in the prompt (its image tokens and markers). */
  promptText: string;
  /** Image tokens in promptText: the features the vision encoder yields for it. */
  imageTokens: number;
}

/**
 * What rebuilds a processor elsewhere (the media decoding thread): plain data that a
 * structured clone carries, given to imageProcessorFromSpec (image-processing.ts).
 */
export type ImageProcessorSpec =
  | { family: 'idefics3'; settings: Idefics3Settings; imageTokenId: number; video: VideoSampling | false }
  | { family: 'llava'; settings: LlavaSettings; imageTokenId: number; placeholder: string };

export interface ImageProcessor {
  /** The family, for the startup report ("idefics3", "llava"). */
  readonly family: string;
  /** The processor as plain data, to run it on another thread. */
  readonly spec: ImageProcessorSpec;
  /** What a chat template writes for a {"type": "image"} part and a raw prompt carries per image. */
  readonly placeholder: string;
  /** The token whose embeddings the image features replace. */
  readonly imageTokenId: number;
  process(image: DecodedImage, param: string, limits: MultimodalLimits): ProcessedImage;
  /**
   * From an image's declared size alone (before decoding): the fewest prompt tokens it
   * becomes (its image tokens and marker tokens, each one token), after the same refusals
   * `process` makes from the size (MEDIA_MAX_IMAGE_TILES).
   */
  declaredPromptTokens(width: number, height: number, param: string, limits: MultimodalLimits): number;
  /** Families that take video: what a {"type": "video"} part becomes in the prompt. */
  readonly videoPlaceholder?: string;
  /** How the family picks a video's frames (decoding samples them so); uniform when absent. */
  readonly videoSampling?: VideoSampling;
  /** A video's sampled frames as one ProcessedImage (frames × image tokens) and its prompt text. */
  processVideo?(video: DecodedVideo, param: string, limits: MultimodalLimits): ProcessedImage;
}

/** Settings that bound the media of one prompt (docs/media.md). */
export interface MultimodalLimits {
  /** Images per prompt (video frames count as images). */
  maxImagesPerPrompt: number;
  /** Frames one image may become (tiles plus the global image). */
  maxImageTiles: number;
}

export const DEFAULT_MULTIMODAL_LIMITS: MultimodalLimits = { maxImagesPerPrompt: 8, maxImageTiles: 26 };

/** A request the model cannot take (a 400 naming `param`). */
export class MultimodalRequestError extends Error {
  constructor(
    message: string,
    readonly param: string | null,
  ) {
    super(message);
    this.name = 'MultimodalRequestError';
  }
}
