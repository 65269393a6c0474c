/**
 * Media parts of a request, between validation and tokenising: every part is checked,
 * fetched and decoded exactly as for a multimodal model, and only then refused if the
 * served model does not take its kind. A text-only model thereby enforces (and tests)
 * the media rules of docs/media.md instead of refusing media unseen.
 */
import type { MindiePromptPart } from '../protocol/mindie.js';
import type { ChatMessage } from '../protocol/openai-chat.js';
import { loadChatMedia, loadPromptMedia, refuseUnacceptedMedia, type LoadedMedia } from '../media/index.js';
import { HttpError } from './errors.js';
import type { ServingContext } from './serving-context.js';

/**
 * The client hung up while its media was being fetched: the fetches are aborted and the
 * answer goes nowhere, so it is a quiet 499 (nginx's "client closed request"), not a
 * logged server error.
 */
function clientGone(): HttpError {
  return new HttpError(499, 'ClientClosedRequest', 'The client closed the request while its media was being fetched.');
}

async function loadAccepted(ctx: ServingContext, load: () => Promise<LoadedMedia[]>, signal: AbortSignal): Promise<LoadedMedia[]> {
  let loaded: LoadedMedia[];
  try {
    loaded = await load();
  } catch (error) {
    if (signal.aborted) throw clientGone();
    throw error;
  }
  refuseUnacceptedMedia(loaded, ctx.acceptedMedia);
  return loaded;
}

/** The media of a MindIE /generate prompt (none for a string prompt), in prompt order. */
export function loadGenerateMedia(
  ctx: ServingContext,
  prompt: string | readonly MindiePromptPart[],
  signal: AbortSignal,
): Promise<LoadedMedia[]> {
  if (typeof prompt === 'string') return Promise.resolve([]);
  return loadAccepted(ctx, () => loadPromptMedia(prompt, ctx.mediaFetcher, { signal, videoSampling: ctx.videoSampling }), signal);
}

/** The media of chat messages' content parts, in message order. */
export function loadChatRequestMedia(ctx: ServingContext, messages: readonly ChatMessage[], signal: AbortSignal): Promise<LoadedMedia[]> {
  return loadAccepted(ctx, () => loadChatMedia(messages, ctx.mediaFetcher, { signal, videoSampling: ctx.videoSampling }), signal);
}
