/**
 * A multimodal prompt between its fetched media and the engine: the images go through
 * the model's processor, the prompt's placeholders are expanded to the image tokens (so
 * they count towards the context before anything runs), and the vision encoder's
 * features ride with the request to the engine's prefill.
 */
import type { Engine, PlaceholderEmbeds } from '../engine/types.js';
import type { LoadedMedia } from '../media/index.js';
import type { MindiePromptPart } from '../protocol/mindie.js';
import { MultimodalRequestError, type MultimodalPrompt, type ProcessedImage, type PromptImage, type VisionLanguageModel } from '../multimodal/index.js';
import { badRequest } from './errors.js';
import type { ServingContext } from './serving-context.js';

export function multimodalModel(engine: Engine): VisionLanguageModel | null {
  return engine.multimodal ?? null;
}

/** Processes the loaded images and expands `text`'s placeholders; 400 naming the part on a refusal. */
export function expandMultimodalPrompt(
  ctx: ServingContext,
  model: VisionLanguageModel,
  text: string,
  media: readonly LoadedMedia[],
  param: string,
): MultimodalPrompt {
  const { maxImagesPerPrompt, maxImageTiles } = ctx.mediaFetcher.config;
  const images: PromptImage[] = media.flatMap((entry): PromptImage[] =>
    entry.decoded.kind === 'image'
      ? [{ param: entry.param, image: entry.decoded }]
      : entry.decoded.kind === 'video'
        ? [{ param: entry.param, video: entry.decoded }]
        : [],
  );
  try {
    return model.buildPrompt(text, images, param, { maxImagesPerPrompt, maxImageTiles });
  } catch (error) {
    if (error instanceof MultimodalRequestError) throw badRequest(error.message, error.param ?? param);
    throw error;
  }
}

/** The features of the prompt's images for the engine (undefined without images). */
export async function encodePromptImages(engine: Engine, images: readonly ProcessedImage[]): Promise<PlaceholderEmbeds[] | undefined> {
  const model = multimodalModel(engine);
  if (model === null || images.length === 0) return undefined;
  const size = engine.embeddingSize;
  if (size === undefined || size === null) throw new Error('a vision-language model without an embedding size');
  return model.encode(images, size);
}

/**
 * A /generate prompt's text for a multimodal model: text parts joined with newlines as for
 * a text-only model, each image part standing where it is as the family's placeholder.
 */
export function multimodalPromptText(prompt: readonly MindiePromptPart[], placeholder: string, videoPlaceholder?: string): string {
  let text = '';
  let previousText = false;
  for (const part of prompt) {
    if (part.type === 'text') {
      text += (previousText ? '\n' : '') + part.text;
      previousText = true;
    } else if (part.type === 'image_url') {
      text += placeholder;
      previousText = false;
    } else if (part.type === 'video_url' && videoPlaceholder !== undefined) {
      text += videoPlaceholder;
      previousText = false;
    }
  }
  return text;
}
