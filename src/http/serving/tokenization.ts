import type { ChatTemplate } from '../../tokenizer/chat-template.js';
import type { Tokenizer } from '../../tokenizer/types.js';
import { buildChatPrompt, chatTemplateVariables, type ChatPromptOptions } from '../chat-prompt.js';
import { badRequest } from '../errors.js';
import { encodePrompt, type InlinePieceBound } from '../prompt-tokens.js';
import type { DetokenizeRequest, TokenizeChatRequest, TokenizeCompletionRequest } from '../tokenization-schemas.js';

export interface TokenizeResponse {
  count: number;
  max_model_len: number;
  tokens: number[];
}

/**
 * The text may have at most this many tokens (tokenizeCeiling): judged from its length before
 * tokenizing, and tokenizing stops once past it, so one request's work follows the context,
 * not the size of its body.
 */
export interface TokenizeBound {
  ceiling: number;
  /** `counted`: tokenizing stopped past the ceiling (else judged from the length alone). */
  refuse(atLeast: number, param: string, counted?: boolean): never;
  /** Where the tokenizer has no thread: the longest piece it may take in one call, for `param`. */
  inlinePieces?(param: string): InlinePieceBound;
}

export async function tokenizeCompletion(
  request: TokenizeCompletionRequest,
  tokenizer: Tokenizer,
  maxModelLen: number,
  bound: TokenizeBound,
  /** The request's: tokenizing on a thread stops when it aborts. */
  signal?: AbortSignal,
  /** Who asks (requestClient): the tokenizer thread takes clients in turn. */
  client?: string,
): Promise<TokenizeResponse> {
  const tokens = await encodePrompt(tokenizer, request.prompt, {
    addSpecialTokens: request.add_special_tokens,
    stopAfter: bound.ceiling,
    signal,
    client,
    refuseAtLeast: (atLeast) => bound.refuse(atLeast, 'prompt'),
    inlinePieces: bound.inlinePieces?.('prompt'),
  });
  if (tokens.length > bound.ceiling) bound.refuse(tokens.length, 'prompt', true);
  return { count: tokens.length, max_model_len: maxModelLen, tokens };
}

/** Tokenizes messages exactly as /v1/chat/completions would feed them to the model. */
export async function tokenizeChat(
  request: TokenizeChatRequest,
  tokenizer: Tokenizer,
  template: ChatTemplate | null,
  maxModelLen: number,
  bound: TokenizeBound,
  /**
   * The template's budget and where a long rendering goes; the served model's media hooks
   * (chat-media.ts: image and audio parts count as in the chat route); the request's signal
   * (work on a thread stops when it aborts) and client (threads take clients in turn).
   */
  chat: Pick<ChatPromptOptions, 'templateBudget' | 'templateOffLoop' | 'multimodal' | 'signal' | 'client'> = {},
): Promise<TokenizeResponse> {
  if (request.add_generation_prompt && request.continue_final_message) {
    throw badRequest('Cannot set both `continue_final_message` and `add_generation_prompt` to True.', 'continue_final_message');
  }
  const { tokenIds } = await buildChatPrompt(template, tokenizer, request.messages, {
    addGenerationPrompt: request.add_generation_prompt,
    continueFinalMessage: request.continue_final_message,
    templateVariables: chatTemplateVariables(request),
    addSpecialTokens: request.add_special_tokens,
    templateOverride: request.chat_template,
    stopAfter: bound.ceiling,
    refuseAtLeast: (atLeast) => bound.refuse(atLeast, 'messages'),
    inlinePieces: bound.inlinePieces?.('messages'),
    ...chat,
  });
  if (tokenIds.length > bound.ceiling) bound.refuse(tokenIds.length, 'messages', true);
  return { count: tokenIds.length, max_model_len: maxModelLen, tokens: tokenIds };
}

export function detokenize(request: DetokenizeRequest, tokenizer: Tokenizer): { prompt: string } {
  request.tokens.forEach((id, i) => {
    if (id >= tokenizer.vocabSize) {
      throw badRequest(`Token id ${id} is out of vocabulary (valid ids are 0 to ${tokenizer.vocabSize - 1}).`, `tokens[${i}]`);
    }
  });
  return { prompt: tokenizer.decode(request.tokens, { skipSpecialTokens: false }) };
}
