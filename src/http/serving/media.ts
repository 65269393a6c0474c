/**
 * Media parts of a request, between validation and tokenising: every part is checked and
 * fetched, its format sniffed and its header read exactly as for a multimodal model; the
 * request is then judged from what the headers declare (the served model's kinds, its
 * image count, tiles and context, its audio window) and only then decoded. A text-only
 * model thereby enforces the fetch rules of docs/media.md and still decodes nothing.
 */
import type { MindiePromptPart } from '../../protocol/mindie.js';
import type { ChatMessage } from '../../protocol/openai-chat.js';
import { checkPromptTokenLimit } from '../../protocol/prompt-limits.js';
import { loadChatMedia, loadPromptMedia, refuseUnacceptedMedia, type DeclaredPart, type LoadedMedia } from '../../media/index.js';
import { MultimodalRequestError } from '../../multimodal/index.js';
import { badRequest, HttpError } from '../errors.js';
import type { ServingContext } from './context.js';

/**
 * The client hung up while its media was being fetched or processed: the work is aborted
 * and the answer goes nowhere, so it is a quiet 499 (nginx's "client closed request"), not
 * a logged server error.
 */
export function clientGone(): HttpError {
  return new HttpError(499, 'ClientClosedRequest', 'The client closed the request while its media was being fetched.');
}

/**
 * The served model's rules, from the parts' declared sizes: refuses before anything is
 * decoded a kind the model does not take, images past its count or tiles or whose tokens
 * alone overflow the context, audio past its window or whose tokens (from exact WAV / FLAC
 * durations) alone overflow it.
 */
function admitDeclared(ctx: ServingContext, api: 'mindie' | 'openai', promptParam: string): (parts: readonly DeclaredPart[]) => void {
  return (parts) => {
    refuseUnacceptedMedia(parts, ctx.acceptedMedia);
    const { maxImagesPerPrompt, maxImageTiles, maxAudioSecondsPerPrompt } = ctx.mediaFetcher.config;
    try {
      const vision = ctx.engine.multimodal;
      if (vision !== undefined && vision !== null) {
        const visuals = parts.flatMap(({ param, declared }) =>
          declared.kind === 'image' ? [{ param, size: declared }] : declared.kind === 'video' ? [{ param }] : [],
        );
        const tokens = vision.declaredPromptTokens(visuals, { maxImagesPerPrompt, maxImageTiles });
        if (tokens > 0) checkPromptTokenLimit(tokens, ctx.limits.prompt, api, promptParam, true);
      }
      const audio = ctx.engine.audio;
      if (audio !== undefined && audio !== null) {
        const heard = parts.flatMap(({ param, declared }) =>
          declared.kind === 'audio' && declared.seconds !== null ? [{ param, seconds: declared.seconds, exact: declared.exact === true }] : [],
        );
        audio.checkDurations(heard, { maxAudioSecondsPerPrompt });
        // Audio tokens known from exact durations count towards the context before any decoding.
        const tokens = audio.declaredPromptTokens(heard.filter((part) => part.exact));
        if (tokens > 0) checkPromptTokenLimit(tokens, ctx.limits.prompt, api, promptParam, true);
      }
    } catch (error) {
      if (error instanceof MultimodalRequestError) throw badRequest(error.message, error.param ?? promptParam);
      throw error;
    }
  };
}

async function loadAccepted(load: () => Promise<LoadedMedia[]>, signal: AbortSignal): Promise<LoadedMedia[]> {
  try {
    return await load();
  } catch (error) {
    if (signal.aborted) throw clientGone();
    throw error;
  }
}

/** The media of a MindIE /generate prompt (none for a string prompt), in prompt order. */
export function loadGenerateMedia(
  ctx: ServingContext,
  prompt: string | readonly MindiePromptPart[],
  signal: AbortSignal,
  /** Who asks (requestClient): the decoding thread takes clients in turn. */
  client?: string,
): Promise<LoadedMedia[]> {
  if (typeof prompt === 'string') return Promise.resolve([]);
  const admit = admitDeclared(ctx, 'mindie', 'prompt');
  return loadAccepted(() => loadPromptMedia(prompt, ctx.mediaFetcher, { signal, videoSampling: ctx.videoSampling, admit, client }), signal);
}

/** The media of chat messages' content parts, in message order. */
export function loadChatRequestMedia(ctx: ServingContext, messages: readonly ChatMessage[], signal: AbortSignal, client?: string): Promise<LoadedMedia[]> {
  const admit = admitDeclared(ctx, 'openai', 'messages');
  return loadAccepted(() => loadChatMedia(messages, ctx.mediaFetcher, { signal, videoSampling: ctx.videoSampling, admit, client }), signal);
}
