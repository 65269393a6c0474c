/**
 * A multimodal prompt between its fetched media and the engine: the images go through
 * the model's processor, the prompt's placeholders are expanded to the image tokens (so
 * they count towards the context before anything runs), and the vision encoder's
 * features ride with the request to the engine's prefill.
 */
import type { Engine } from '../../engine/types.js';
import type { PlaceholderEmbeds } from '../../onnx/placeholder-embeds.js';
import { decoderForClient, type LoadedMedia, type MediaDecoder } from '../../media/index.js';
import type { MindiePromptPart } from '../../protocol/mindie.js';
import {
  MultimodalRequestError,
  type AudioLanguageModel,
  type AudioPrompt,
  type MultimodalPrompt,
  type ProcessedAudio,
  type ProcessedImage,
  type ProcessedVisuals,
  type PromptImage,
  type VisionLanguageModel,
} from '../../multimodal/index.js';
import { badRequest } from '../errors.js';
import type { ServingContext } from './context.js';
import { clientGone } from './media.js';

export function multimodalModel(engine: Engine): VisionLanguageModel | null {
  return engine.multimodal ?? null;
}

/**
 * Runs the model's image processor over the loaded images and videos, off the event loop
 * (the media decoding thread, under MEDIA_DECODE_TIMEOUT_MS); 400 naming the part on a refusal.
 */
export async function processMultimodalImages(
  ctx: ServingContext,
  model: VisionLanguageModel,
  media: readonly LoadedMedia[],
  param: string,
  signal: AbortSignal,
  /** Who asks (requestClient): the decoding thread takes clients in turn. */
  client?: string,
): Promise<ProcessedVisuals> {
  const { maxImagesPerPrompt, maxImageTiles } = ctx.mediaFetcher.config;
  const images: PromptImage[] = media.flatMap((entry): PromptImage[] =>
    entry.decoded.kind === 'image'
      ? [{ param: entry.param, image: entry.decoded }]
      : entry.decoded.kind === 'video'
        ? [{ param: entry.param, video: entry.decoded }]
        : [],
  );
  try {
    return await model.processImages(images, { maxImagesPerPrompt, maxImageTiles }, clientDecoder(ctx, client), signal);
  } catch (error) {
    if (error instanceof MultimodalRequestError) throw badRequest(error.message, error.param ?? param);
    if (signal.aborted) throw clientGone();
    throw error;
  }
}

/** Expands `text`'s placeholders with the processed images; 400 when they do not match the parts. */
export function expandMultimodalPrompt(model: VisionLanguageModel, text: string, visuals: ProcessedVisuals, param: string): MultimodalPrompt {
  try {
    return model.expandPrompt(text, visuals, param);
  } catch (error) {
    if (error instanceof MultimodalRequestError) throw badRequest(error.message, error.param ?? param);
    throw error;
  }
}

export function audioModel(engine: Engine): AudioLanguageModel | null {
  return engine.audio ?? null;
}

/**
 * Runs the model's feature extractor over the loaded audio parts, off the event loop (the
 * media decoding thread, under MEDIA_DECODE_TIMEOUT_MS); 400 naming the part over a limit
 * (MEDIA_MAX_AUDIO_SECONDS_PER_PROMPT, the model's window) or too short.
 */
export async function processAudioParts(
  ctx: ServingContext,
  model: AudioLanguageModel,
  media: readonly LoadedMedia[],
  param: string,
  signal: AbortSignal,
  client?: string,
): Promise<ProcessedAudio[]> {
  const audio = media.flatMap((entry) => (entry.decoded.kind === 'audio' ? [{ param: entry.param, audio: entry.decoded }] : []));
  try {
    return await model.processAudio(audio, { maxAudioSecondsPerPrompt: ctx.mediaFetcher.config.maxAudioSecondsPerPrompt }, clientDecoder(ctx, client), signal);
  } catch (error) {
    if (error instanceof MultimodalRequestError) throw badRequest(error.message, error.param ?? param);
    if (signal.aborted) throw clientGone();
    throw error;
  }
}

/** Expands `text`'s audio placeholders with the processed parts; 400 when they do not match the parts. */
export function expandAudioPrompt(model: AudioLanguageModel, text: string, processed: readonly ProcessedAudio[], param: string): AudioPrompt {
  try {
    return model.expandPrompt(text, processed, param);
  } catch (error) {
    if (error instanceof MultimodalRequestError) throw badRequest(error.message, error.param ?? param);
    throw error;
  }
}

/** The features of the prompt's images and audio parts for the engine (undefined without either). */
export async function encodePromptMedia(
  engine: Engine,
  images: readonly ProcessedImage[],
  audio: readonly ProcessedAudio[],
): Promise<PlaceholderEmbeds[] | undefined> {
  const imageEmbeds = (await encodePromptImages(engine, images)) ?? [];
  const model = audioModel(engine);
  const size = engine.embeddingSize;
  if (model === null || audio.length === 0 || size === undefined || size === null) return imageEmbeds.length > 0 ? imageEmbeds : undefined;
  return [...imageEmbeds, ...(await model.encode(audio, size))];
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
export function multimodalPromptText(
  prompt: readonly MindiePromptPart[],
  placeholder: string,
  videoPlaceholder?: string,
  audioPlaceholder?: string,
): string {
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
    } else if (part.type === 'audio_url' && audioPlaceholder !== undefined) {
      text += audioPlaceholder;
      previousText = false;
    }
  }
  return text;
}

/** The media pipeline's decoder, naming `client` on what it queues (absent where the pipeline decodes inline). */
function clientDecoder(ctx: ServingContext, client: string | undefined): MediaDecoder | undefined {
  const decoder = ctx.mediaFetcher.decoder;
  return decoder === undefined ? undefined : decoderForClient(decoder, client);
}
