import { messageText, type ChatMessage } from '../protocol/openai-chat.js';
import { ChatTemplate, ChatTemplateError, type ChatTemplateContentPart, type ChatTemplateMessage } from '../tokenizer/chat-template.js';
import type { TemplateBudget } from '../tokenizer/template-budget.js';
import { INLINE_TEMPLATE_SOURCE_CHARS, renderChatTemplate, TemplateSyntaxError, type TemplateOffLoop, type TemplateSource } from '../tokenizer/template-thread.js';
import type { Tokenizer } from '../tokenizer/types.js';
import { badRequest } from './errors.js';
import { clientClosed, encodePrompt, type InlinePieceBound } from './prompt-tokens.js';

export interface ChatPromptOptions {
  addGenerationPrompt: boolean;
  continueFinalMessage: boolean;
  /** chat_template_kwargs plus tools/documents: extra template variables. */
  templateVariables?: Record<string, unknown>;
  /** vLLM's add_special_tokens for chat: false by default, since the template writes BOS itself. */
  addSpecialTokens: boolean;
  /** A request's own template (vLLM's `chat_template` field), instead of the model's. */
  templateOverride?: string;
  /** Steps and output the template may take (maxChatTemplateSteps, maxPromptChars). */
  templateBudget?: TemplateBudget;
  /** Tokenizing may stop once the prompt has more tokens than this (it will be refused anyway). */
  stopAfter?: number;
  /** Without stopAfter: the most tokens the prompt may have, judged from its length (see encodePrompt). */
  lengthCeiling?: number;
  /** Only the last this many tokens are wanted (truncate_prompt_tokens; see encodePrompt). */
  keepLast?: number;
  /** Refuses a prompt whose length alone shows more tokens than stopAfter or lengthCeiling (see encodePrompt). */
  refuseAtLeast?: (tokenCount: number) => void;
  /** The request's: work on a thread for it (tokenizing, rendering) stops when it aborts, and the client gets a 499. */
  signal?: AbortSignal;
  /** Where a long rendering goes (Node's template thread, template-thread.ts); absent: it renders here within its budget. */
  templateOffLoop?: TemplateOffLoop;
  /** Where the tokenizer has no thread: the longest piece it may take in one call (see encodePrompt). */
  inlinePieces?: InlinePieceBound;
  /**
   * A vision-language model: messages reach the template as content parts (text, and
   * {"type": "image"} for image parts), and `expand` rewrites the rendered text (its
   * image placeholders) before tokenizing.
   */
  multimodal?: {
    expand(text: string): string;
    /**
     * For a template that prints content as text (Ultravox's): messages are flattened to
     * strings, each media part of these kinds becoming its placeholder on a line before
     * the text unless the text already carries it (vLLM's "string" content format).
     */
    stringContentPlaceholders?: Partial<Record<'audio', string>>;
  };
}

export interface ChatPrompt {
  text: string;
  tokenIds: number[];
}

/**
 * Text parts are joined with newlines (vLLM's "string" content format). Media parts
 * have no place in a text-only template: /v1/chat/completions has already fetched and
 * refused them (serving-media.ts); /tokenize, which fetches nothing, is refused here.
 */
export function toTemplateMessages(
  messages: readonly ChatMessage[],
  contentParts = false,
  stringContentPlaceholders?: Partial<Record<'audio', string>>,
): ChatTemplateMessage[] {
  if (stringContentPlaceholders !== undefined) return messages.map((message) => toStringMessage(message, stringContentPlaceholders));
  if (contentParts) return messages.map(toPartsMessage);
  return messages.map((message, i) => {
    if (Array.isArray(message.content)) {
      (message.content as { type: string }[]).forEach((part, j) => {
        if (part.type !== 'text' && part.type !== 'refusal') {
          throw badRequest(
            `This model accepts text only; content parts of type "${part.type}" are not supported.`,
            `messages[${i}].content[${j}]`,
          );
        }
      });
    }
    return { ...message, content: messageText(message) };
  });
}

const AUDIO_PARTS = new Set(['input_audio', 'audio_url']);

/** vLLM's "string" content format with media: the missing placeholders, one per line, then the text. */
function toStringMessage(message: ChatMessage, placeholders: Partial<Record<'audio', string>>): ChatTemplateMessage {
  const text = messageText(message);
  const parts = Array.isArray(message.content) ? (message.content as Array<{ type: string }>) : [];
  const placeholder = placeholders.audio;
  if (placeholder === undefined) return { ...message, content: text };
  const wanted = parts.filter((part) => AUDIO_PARTS.has(part.type)).length;
  const present = text.split(placeholder).length - 1;
  const missing = Math.max(0, wanted - present);
  return { ...message, content: [...Array<string>(missing).fill(placeholder), text].join('\n') };
}

/**
 * For a multimodal template (vLLM's "openai" content format): content is always a list,
 * a string becoming one text part; image parts become {"type": "image"}. Other media were
 * refused before (the model takes images only).
 */
function toPartsMessage(message: ChatMessage): ChatTemplateMessage {
  const content = message.content;
  const parts: ChatTemplateContentPart[] =
    content === undefined || content === null
      ? []
      : typeof content === 'string'
        ? [{ type: 'text', text: content }]
        : (content as Array<{ type: string; text?: string; refusal?: string }>).map((part) =>
            part.type === 'text'
              ? { type: 'text', text: part.text ?? '' }
              : part.type === 'refusal'
                ? { type: 'text', text: part.refusal ?? '' }
                : part.type === 'image_url'
                  ? { type: 'image' }
                  : part.type === 'video_url'
                    ? { type: 'video' }
                    : AUDIO_PARTS.has(part.type)
                      ? // Qwen2-Audio's template tests for an "audio_url" (or "audio") key, as transformers' messages carry.
                        { type: 'audio', audio_url: '' }
                      : { type: part.type },
          );
  return { ...message, content: parts };
}

/**
 * A request's own template, parsed here; or, when it is long and a thread renders long
 * templates, left as source for the thread to parse with its rendering (parsing a 64 K
 * template held the loop 80–360 ms).
 */
function requestTemplate(source: string, modelTemplate: ChatTemplate | null, tokenizer: Tokenizer, offLoop: TemplateOffLoop | undefined): ChatTemplate | TemplateSource {
  const token = (id: number | null | undefined) => (id === null || id === undefined ? '' : (tokenizer.idToToken(id) ?? ''));
  const bosToken = modelTemplate?.bosToken ?? token(tokenizer.bosTokenId);
  const eosToken = modelTemplate?.eosToken ?? token(tokenizer.eosTokenIds[0]);
  if (offLoop !== undefined && source.length > INLINE_TEMPLATE_SOURCE_CHARS) return { source, bosToken, eosToken };
  try {
    return new ChatTemplate(source, bosToken, eosToken);
  } catch (error) {
    throw invalidTemplate((error as Error).message);
  }
}

function invalidTemplate(reason: string) {
  return badRequest(`chat_template is not a valid Jinja template: ${reason}`, 'chat_template');
}

/**
 * Steps a request's own template gets: a small request must not buy the whole
 * maxChatTemplateSteps (it is CPU time, on the loop in workerd and the page, on Node's
 * template thread past a few ms). Real templates cost 13–170 steps a message (50 models'
 * measured; the embedded model's ~100): a base plus 200 per message, within maxChatTemplateSteps.
 */
export const REQUEST_TEMPLATE_BASE_STEPS = 2000;
export const REQUEST_TEMPLATE_STEPS_PER_MESSAGE = 200;

export function requestTemplateBudget(budget: TemplateBudget | undefined, messages: number): TemplateBudget {
  const scaled = REQUEST_TEMPLATE_BASE_STEPS + REQUEST_TEMPLATE_STEPS_PER_MESSAGE * messages;
  return {
    maxSteps: Math.min(budget?.maxSteps ?? scaled, scaled),
    maxOutputChars: budget?.maxOutputChars ?? 4 * 1024 * 1024,
    stepsBound: `a request's own template: ${REQUEST_TEMPLATE_BASE_STEPS} + ${REQUEST_TEMPLATE_STEPS_PER_MESSAGE} per message, within maxChatTemplateSteps`,
  };
}

/** Renders the conversation with the chat template and tokenizes it, as the model will see it. */
export async function buildChatPrompt(
  modelTemplate: ChatTemplate | null,
  tokenizer: Tokenizer,
  messages: readonly ChatMessage[],
  options: ChatPromptOptions,
): Promise<ChatPrompt> {
  // As transformers' get_chat_template: a request with tools gets the model's "tool_use" template when it has one.
  const modelChoice = options.templateVariables?.tools !== undefined && modelTemplate?.toolUse ? modelTemplate.toolUse : modelTemplate;
  const template =
    options.templateOverride !== undefined ? requestTemplate(options.templateOverride, modelTemplate, tokenizer, options.templateOffLoop) : modelChoice;
  if (template === null) {
    throw badRequest(
      'This model has no chat template (no chat_template.jinja, and tokenizer_config.json has no "chat_template"); pass one in the request\'s "chat_template" field.',
    );
  }
  const own = options.templateOverride !== undefined;
  const templateMessages = toTemplateMessages(messages, options.multimodal !== undefined, options.multimodal?.stringContentPlaceholders);
  let rendered: string;
  try {
    const renderOptions = {
      addGenerationPrompt: options.addGenerationPrompt,
      continueFinalMessage: options.continueFinalMessage,
      kwargs: options.templateVariables,
      budget: own ? requestTemplateBudget(options.templateBudget, messages.length) : options.templateBudget,
    };
    rendered = await renderChatTemplate(template, templateMessages, renderOptions, options.templateOffLoop);
  } catch (error) {
    if (options.signal?.aborted) throw clientClosed('its chat template was being rendered');
    if (error instanceof TemplateSyntaxError) throw invalidTemplate(error.message);
    // A request's own template that runs past its steps or its time is that field's fault.
    if (own && error instanceof ChatTemplateError && (error.budgetBound === 'steps' || error.budgetBound === 'time')) throw badRequest(error.message, 'chat_template');
    throw error;
  }
  const text = options.multimodal?.expand(rendered) ?? rendered;
  const tokenIds = await encodePrompt(tokenizer, text, {
    addSpecialTokens: options.addSpecialTokens,
    stopAfter: options.stopAfter,
    lengthCeiling: options.lengthCeiling,
    keepLast: options.keepLast,
    refuseAtLeast: options.refuseAtLeast,
    signal: options.signal,
    inlinePieces: options.inlinePieces,
  });
  return { text, tokenIds };
}
