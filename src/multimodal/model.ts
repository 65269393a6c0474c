/**
 * A vision-language model's multimodal side: its family's image processor and its
 * vision encoder, chosen from config.json's model_type. The engine owns the decoder and
 * embed_tokens; this turns a prompt's images into the text that stands for them and the
 * features the engine splices in at their image tokens.
 */
import type { PlaceholderEmbeds } from '../onnx/placeholder-embeds.js';
import type { CompanionGraph } from '../onnx/model-files.js';
import type { InferenceSession, OrtRuntime } from '../onnx/ort-runtime.js';
import type { MediaDecoder } from '../media/index.js';
import type { JsonObject } from './config-fields.js';
import { Idefics3Processor } from './processors/idefics3.js';
import { LlavaProcessor } from './processors/llava.js';
import { processImages } from './image-processing.js';
import {
  DEFAULT_MULTIMODAL_LIMITS,
  MultimodalRequestError,
  type ImageProcessor,
  type MultimodalLimits,
  type ProcessedImage,
  type PromptImage,
} from './types.js';
import { VisionEncoder } from './vision-encoder.js';
import { placeholderFeatures } from './placeholder-features.js';

export interface VisionLanguageFiles {
  config: JsonObject;
  preprocessorConfig?: JsonObject;
  processorConfig?: JsonObject;
  visionEncoder: CompanionGraph;
}

/** model_type → processor family. */
const FAMILIES: Record<string, 'idefics3' | 'llava'> = { idefics3: 'idefics3', smolvlm: 'idefics3', llava: 'llava' };

export type { PromptImage } from './types.js';

/** A prompt with its images processed: the text with every placeholder expanded. */
export interface MultimodalPrompt {
  text: string;
  images: ProcessedImage[];
}

/** A prompt's images and videos after the processor, in the order of its parts. */
export interface ProcessedVisuals {
  parts: { video: boolean; processed: ProcessedImage }[];
}

/** An image part's declared size, or a video part (size unknown before decoding). */
export interface DeclaredVisual {
  param: string;
  size?: { width: number; height: number };
}

function checkImageCount(images: readonly { param: string }[], limits: MultimodalLimits): void {
  if (images.length <= limits.maxImagesPerPrompt) return;
  const extra = images[limits.maxImagesPerPrompt];
  throw new MultimodalRequestError(
    `${extra.param}: a prompt may carry at most ${limits.maxImagesPerPrompt} images (MEDIA_MAX_IMAGES_PER_PROMPT), got ${images.length}.`,
    extra.param,
  );
}

export class VisionLanguageModel {
  private constructor(
    readonly processor: ImageProcessor,
    private readonly encoder: VisionEncoder,
    readonly encoderFile: string,
  ) {}

  static async load(options: {
    ort: OrtRuntime;
    files: VisionLanguageFiles;
    tokenToId: (token: string) => number | undefined;
    sessionOptions?: InferenceSession.SessionOptions;
    loadFromPath?: boolean;
  }): Promise<VisionLanguageModel> {
    const { files } = options;
    const modelType = String(files.config.model_type ?? '');
    const family = FAMILIES[modelType];
    if (family === undefined) {
      throw new Error(
        `${files.visionEncoder.file} is present, but config.json's model_type "${modelType}" has no image processor here ` +
          `(supported: ${Object.keys(FAMILIES).join(', ')}).`,
      );
    }
    if (files.preprocessorConfig === undefined) throw new Error(`A ${modelType} model needs preprocessor_config.json, or an "image_processor" in processor_config.json (its image processor's settings).`);
    const processorFiles = { config: files.config, preprocessorConfig: files.preprocessorConfig, processorConfig: files.processorConfig ?? {} };
    const processor =
      family === 'idefics3'
        ? Idefics3Processor.create(processorFiles, options.tokenToId, modelType === 'smolvlm')
        : LlavaProcessor.create(processorFiles, options.tokenToId);
    const source = options.loadFromPath && files.visionEncoder.path !== undefined ? files.visionEncoder.path : files.visionEncoder.onnx;
    const encoder = await VisionEncoder.create(options.ort, source, options.sessionOptions ?? {}, files.visionEncoder.file);
    return new VisionLanguageModel(processor, encoder, files.visionEncoder.file);
  }

  get imageTokenId(): number {
    return this.processor.imageTokenId;
  }

  /**
   * Runs the processor over a prompt's images and videos (on the media decoding thread
   * where `decoder` has one, under its deadline): the slow half of a prompt's expansion,
   * done before the chat template so that `expandPrompt` stays synchronous and cheap.
   * Throws MultimodalRequestError, MediaError 'timeout', or the signal's reason.
   */
  async processImages(
    images: readonly PromptImage[],
    limits: MultimodalLimits = DEFAULT_MULTIMODAL_LIMITS,
    decoder?: MediaDecoder,
    signal?: AbortSignal,
  ): Promise<ProcessedVisuals> {
    checkImageCount(images, limits);
    const processed = await processImages(this.processor, images, limits, decoder, signal);
    return { parts: processed.map((entry, index) => ({ video: images[index].video !== undefined, processed: entry })) };
  }

  /**
   * Expands `text`, whose placeholders (one per image, in order) were written by the chat
   * template or the prompt's parts, with the processed images' prompt text. Throws
   * MultimodalRequestError when the placeholders do not match the parts.
   */
  expandPrompt(text: string, visuals: ProcessedVisuals, param: string | null): MultimodalPrompt {
    const { placeholder, videoPlaceholder } = this.processor;
    const marks = [placeholder, ...(videoPlaceholder !== undefined ? [videoPlaceholder] : [])];
    const pattern = new RegExp(marks.map((mark) => mark.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'), 'g');
    const found = [...text.matchAll(pattern)].map((match) => ({ mark: match[0], at: match.index }));
    const count = (mark: string, list: readonly { mark: string }[]) => list.filter((entry) => entry.mark === mark).length;
    const parts = visuals.parts.map((entry) => ({ mark: entry.video ? videoPlaceholder! : placeholder, processed: entry.processed }));
    for (const mark of marks) {
      if (count(mark, found) !== count(mark, parts)) {
        throw new MultimodalRequestError(
          `The prompt has ${count(mark, found)} "${mark}" placeholders for ${count(mark, parts)} ${mark === placeholder ? 'images' : 'videos'}: ` +
            'each media part stands for one, and the text may not contain the placeholder itself.',
          param,
        );
      }
    }
    // The k-th placeholder of a kind takes the k-th part of that kind.
    const queues = new Map(marks.map((mark) => [mark, parts.filter((part) => part.mark === mark).map((part) => part.processed)]));
    const ordered: ProcessedImage[] = [];
    let expanded = '';
    let last = 0;
    for (const { mark, at } of found) {
      const next = queues.get(mark)!.shift()!;
      ordered.push(next);
      expanded += text.slice(last, at) + next.promptText;
      last = at + mark.length;
    }
    expanded += text.slice(last);
    return { text: expanded, images: ordered };
  }

  /**
   * Before decoding, from what the headers declare: the image count, each image's tiles
   * and the fewest prompt tokens the images become (videos count as images; their frames
   * are known only once decoded). Throws MultimodalRequestError.
   */
  declaredPromptTokens(parts: readonly DeclaredVisual[], limits: MultimodalLimits = DEFAULT_MULTIMODAL_LIMITS): number {
    checkImageCount(parts, limits);
    let tokens = 0;
    for (const part of parts) if (part.size !== undefined) tokens += this.processor.declaredPromptTokens(part.size.width, part.size.height, part.param, limits);
    return tokens;
  }

  /** Runs the vision encoder over every image: the features for the prompt's image tokens, in order. */
  async encode(images: readonly ProcessedImage[], hidden: number): Promise<PlaceholderEmbeds[]> {
    return placeholderFeatures(images, this.processor.imageTokenId, (part) => this.encoder.encode(part, hidden));
  }

  /**
   * One small picture through the processor and the encoder at startup: frames of a size the
   * encoder cannot take (a tile size its position embeddings do not fit, a feature count
   * that is not image_seq_len) refuse the model then, not its first image request with a 500.
   */
  async probe(hidden: number): Promise<void> {
    const side = 8;
    const processed = this.processor.process({ kind: 'image', width: side, height: side, rgb: new Uint8Array(side * side * 3).fill(128) }, 'startup', DEFAULT_MULTIMODAL_LIMITS);
    try {
      await this.encoder.encode(processed, hidden);
    } catch (error) {
      throw new Error(
        `${this.encoderFile} does not take the frames its image processor makes (${processed.frames} × 3 × ${processed.height} × ${processed.width}, ` +
          `${processed.imageTokens} image tokens): ${(error as Error).message}`,
      );
    }
  }

  describe(): string {
    return `${this.processor.family} image processor, ${this.encoderFile}`;
  }

  async dispose(): Promise<void> {
    await this.encoder.dispose();
  }
}
