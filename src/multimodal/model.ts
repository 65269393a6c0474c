/**
 * A vision-language model's multimodal side: its family's image processor and its
 * vision encoder, chosen from config.json's model_type. The engine owns the decoder and
 * embed_tokens; this turns a prompt's images into the text that stands for them and the
 * features the engine splices in at their image tokens.
 */
import type { PlaceholderEmbeds } from '../engine/types.js';
import type { CompanionGraph } from '../engine/model-files.js';
import type { InferenceSession, OrtRuntime } from '../engine/ort-runtime.js';
import type { DecodedImage } from '../media/index.js';
import type { JsonObject } from './config-fields.js';
import { Idefics3Processor } from './processors/idefics3.js';
import { LlavaProcessor } from './processors/llava.js';
import { DEFAULT_MULTIMODAL_LIMITS, MultimodalRequestError, type ImageProcessor, type MultimodalLimits, type ProcessedImage } from './types.js';
import { VisionEncoder } from './vision-encoder.js';

export interface VisionLanguageFiles {
  config: JsonObject;
  preprocessorConfig?: JsonObject;
  processorConfig?: JsonObject;
  visionEncoder: CompanionGraph;
}

/** model_type → processor family. */
const FAMILIES: Record<string, 'idefics3' | 'llava'> = { idefics3: 'idefics3', smolvlm: 'idefics3', llava: 'llava' };

export interface PromptImage {
  param: string;
  image: DecodedImage;
}

/** A prompt with its images processed: the text with every placeholder expanded. */
export interface MultimodalPrompt {
  text: string;
  images: ProcessedImage[];
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
    if (files.preprocessorConfig === undefined) throw new Error(`A ${modelType} model needs preprocessor_config.json (its image processor's settings).`);
    const processorFiles = { config: files.config, preprocessorConfig: files.preprocessorConfig, processorConfig: files.processorConfig ?? {} };
    const processor =
      family === 'idefics3'
        ? Idefics3Processor.create(processorFiles, options.tokenToId)
        : LlavaProcessor.create(processorFiles, options.tokenToId);
    const source = options.loadFromPath && files.visionEncoder.path !== undefined ? files.visionEncoder.path : files.visionEncoder.onnx;
    const encoder = await VisionEncoder.create(options.ort, source, options.sessionOptions ?? {}, files.visionEncoder.file);
    return new VisionLanguageModel(processor, encoder, files.visionEncoder.file);
  }

  get imageTokenId(): number {
    return this.processor.imageTokenId;
  }

  /**
   * Processes the images and expands `text`, whose placeholders (one per image, in order)
   * were written by the chat template or the prompt's parts. Throws MultimodalRequestError.
   */
  buildPrompt(
    text: string,
    images: readonly PromptImage[],
    param: string | null,
    limits: MultimodalLimits = DEFAULT_MULTIMODAL_LIMITS,
  ): MultimodalPrompt {
    if (images.length > limits.maxImagesPerPrompt) {
      const extra = images[limits.maxImagesPerPrompt];
      throw new MultimodalRequestError(
        `${extra.param}: a prompt may carry at most ${limits.maxImagesPerPrompt} images (MEDIA_MAX_IMAGES_PER_PROMPT), got ${images.length}.`,
        extra.param,
      );
    }
    const pieces = text.split(this.processor.placeholder);
    if (pieces.length - 1 !== images.length) {
      throw new MultimodalRequestError(
        `The prompt has ${pieces.length - 1} image placeholders ("${this.processor.placeholder}") for ${images.length} images: ` +
          'each image part stands for one, and the text may not contain the placeholder itself.',
        param,
      );
    }
    const processed = images.map(({ image, param: imageParam }) => this.processor.process(image, imageParam, limits));
    let expanded = pieces[0];
    processed.forEach((image, index) => (expanded += image.promptText + pieces[index + 1]));
    return { text: expanded, images: processed };
  }

  /** Runs the vision encoder over every image: the features for the prompt's image tokens, in order. */
  async encode(images: readonly ProcessedImage[], hidden: number): Promise<PlaceholderEmbeds[]> {
    if (images.length === 0) return [];
    const parts: Float32Array[] = [];
    for (const image of images) parts.push(await this.encoder.encode(image, hidden));
    const embeds = new Float32Array(parts.reduce((sum, part) => sum + part.length, 0));
    let offset = 0;
    for (const part of parts) {
      embeds.set(part, offset);
      offset += part.length;
    }
    return [{ tokenId: this.processor.imageTokenId, embeds }];
  }

  describe(): string {
    return `${this.processor.family} image processor, ${this.encoderFile}`;
  }

  async dispose(): Promise<void> {
    await this.encoder.dispose();
  }
}
