/**
 * LLaVA (1.5 style): one fixed-size image per `<image>`, CLIPImageProcessor's rules —
 * RGB; resize (Pillow, `resample`, bicubic by default) so the shortest edge is
 * size.shortest_edge and the other edge int(shortest × long / short); center crop to
 * crop_size (top = (height − crop) // 2); rescale; normalise — and LlavaProcessor's
 * expansion: each `<image>` becomes `<image>` × (height / patch) × (width / patch)
 * (+ num_additional_image_tokens, − 1 for the "default" feature strategy, which drops CLS).
 */
import type { DecodedImage } from '../../media/index.js';
import {
  boolField,
  channelsField,
  numberField,
  positiveIntField,
  resampleField,
  sizeField,
  tokenIdOf,
  type JsonObject,
} from '../config-fields.js';
import { cropRgb, normalizeToChw, resizeRgb, type PilFilterName } from '../pil-resample.js';
import type { LlavaSettings } from './settings.js';
import type { ImageProcessor, ImageProcessorSpec, MultimodalLimits, ProcessedImage } from '../types.js';
import { MultimodalRequestError } from '../types.js';

const CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073];
const CLIP_STD = [0.26862954, 0.26130258, 0.27577711];


export class LlavaProcessor implements ImageProcessor {
  readonly family = 'llava';
  readonly placeholder: string;

  constructor(
    readonly settings: LlavaSettings,
    readonly imageTokenId: number,
    placeholder: string,
  ) {
    this.placeholder = placeholder;
  }

  static create(
    files: { config: JsonObject; preprocessorConfig: JsonObject; processorConfig: JsonObject },
    tokenToId: (token: string) => number | undefined,
  ): LlavaProcessor {
    const pre = files.preprocessorConfig;
    const file = 'preprocessor_config.json';
    const processor = files.processorConfig;
    const vision = (files.config.vision_config ?? {}) as JsonObject;
    const doCrop = boolField(pre, 'do_center_crop', true);
    const crop = doCrop
      ? { height: sizeField(pre, 'crop_size', 'height', undefined, file), width: sizeField(pre, 'crop_size', 'width', undefined, file) }
      : null;
    const side = crop ?? { height: sizeField(pre, 'size', 'shortest_edge', undefined, file), width: sizeField(pre, 'size', 'shortest_edge', undefined, file) };
    const patch = positiveIntField(processor, 'patch_size', typeof vision.patch_size === 'number' ? vision.patch_size : undefined, 'processor_config.json');
    const strategy = processor.vision_feature_select_strategy ?? files.config.vision_feature_select_strategy ?? 'default';
    const additional = numberField(processor, 'num_additional_image_tokens', 1, 'processor_config.json');
    const imageTokens = Math.floor(side.height / patch) * Math.floor(side.width / patch) + additional - (strategy === 'default' ? 1 : 0);
    const placeholder = typeof processor.image_token === 'string' ? processor.image_token : '<image>';
    const imageTokenId = tokenIdOf(tokenToId, placeholder, 'LLaVA');
    const configured = files.config.image_token_index ?? files.config.image_token_id;
    if (typeof configured === 'number' && configured !== imageTokenId) {
      throw new Error(`config.json "image_token_index" is ${configured}, but the tokenizer's "${placeholder}" is ${imageTokenId}.`);
    }
    const doNormalize = boolField(pre, 'do_normalize', true);
    const settings: LlavaSettings = {
      shortestEdge: boolField(pre, 'do_resize', true) ? sizeField(pre, 'size', 'shortest_edge', undefined, file) : null,
      resample: resampleField(pre, 3, file),
      crop,
      rescale: boolField(pre, 'do_rescale', true) ? numberField(pre, 'rescale_factor', 1 / 255, file) : null,
      mean: doNormalize ? channelsField(pre, 'image_mean', CLIP_MEAN, file) : null,
      std: doNormalize ? channelsField(pre, 'image_std', CLIP_STD, file) : null,
      imageTokens,
    };
    return new LlavaProcessor(settings, imageTokenId, placeholder);
  }

  get spec(): ImageProcessorSpec {
    return { family: 'llava', settings: this.settings, imageTokenId: this.imageTokenId, placeholder: this.placeholder };
  }

  declaredPromptTokens(): number {
    return this.settings.imageTokens;
  }

  process(image: DecodedImage, param: string, _limits: MultimodalLimits): ProcessedImage {
    const { settings } = this;
    let current = image;
    if (settings.shortestEdge !== null) {
      const short = Math.min(current.width, current.height);
      const long = Math.max(current.width, current.height);
      const scaledLong = Math.trunc((settings.shortestEdge * long) / short);
      const width = current.width <= current.height ? settings.shortestEdge : scaledLong;
      const height = current.width <= current.height ? scaledLong : settings.shortestEdge;
      current = resizeRgb(current, width, height, settings.resample);
    }
    if (settings.crop !== null) {
      const { height, width } = settings.crop;
      if (current.height < height || current.width < width) {
        throw new MultimodalRequestError(`${param}: the image is smaller than the model's ${width}x${height} crop.`, param);
      }
      current = cropRgb(current, (current.width - width) >> 1, (current.height - height) >> 1, width, height);
    }
    return {
      param,
      pixels: normalizeToChw(current, settings),
      frames: 1,
      height: current.height,
      width: current.width,
      promptText: this.placeholder.repeat(settings.imageTokens),
      imageTokens: settings.imageTokens,
    };
  }
}
