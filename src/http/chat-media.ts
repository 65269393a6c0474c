/**
 * The chat template's media hooks for the served model, shared by /v1/chat/completions and
 * /tokenize so both count the same prompt tokens for the same messages.
 */
import type { LoadedMedia } from '../media/index.js';
import type { ProcessedAudio, ProcessedImage } from '../multimodal/index.js';
import type { ChatPromptOptions } from './chat-prompt.js';
import type { ServingContext } from './serving/context.js';
import { audioModel, expandAudioPrompt, expandMultimodalPrompt, multimodalModel, processAudioParts, processMultimodalImages } from './serving/multimodal.js';

export interface ChatMedia {
  /** The buildChatPrompt option (undefined for a text-only model). */
  expansion: ChatPromptOptions['multimodal'];
  /** What the expansion processed (filled once the template has run): what the engine encodes. */
  images: ProcessedImage[];
  audio: ProcessedAudio[];
}

/**
 * A vision-language template sees content parts ({"type": "image"}) and writes a
 * placeholder per image, which expands to the image's tokens. An audio-language template
 * sees {"type": "audio"} parts (or, for a template that prints content as text, the
 * placeholder before the text) the same way. Async so that work on the media before the
 * template (processing off the event loop) belongs here too.
 */
export async function prepareChatMedia(ctx: ServingContext, media: readonly LoadedMedia[], signal: AbortSignal, client?: string): Promise<ChatMedia> {
  const multimodal = multimodalModel(ctx.engine);
  const audio = audioModel(ctx.engine);
  const out: ChatMedia = { expansion: undefined, images: [], audio: [] };
  if (multimodal === null && audio === null) return out;
  // The images' resizing and the audio's features run now, off the event loop; the template's expansion only splices text.
  const visuals = multimodal !== null ? await processMultimodalImages(ctx, multimodal, media, 'messages', signal, client) : null;
  const heard = audio !== null ? await processAudioParts(ctx, audio, media, 'messages', signal, client) : null;
  out.expansion = {
    expand: (text) => {
      let expanded = text;
      if (multimodal !== null && visuals !== null) {
        const prompt = expandMultimodalPrompt(multimodal, expanded, visuals, 'messages');
        out.images = prompt.images;
        expanded = prompt.text;
      }
      if (audio !== null && heard !== null) {
        const prompt = expandAudioPrompt(audio, expanded, heard, 'messages');
        out.audio = prompt.audio;
        expanded = prompt.text;
      }
      return expanded;
    },
    stringContentPlaceholders: multimodal === null && audio?.processor.contentFormat === 'string' ? { audio: audio.processor.placeholder } : undefined,
  };
  return out;
}
