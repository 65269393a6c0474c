import { messageText, type ChatMessage } from '../protocol/openai-chat.js';
import { ChatTemplate, ChatTemplateError, type ChatTemplateContentPart, type ChatTemplateMessage } from '../tokenizer/chat-template.js';
import type { TemplateBudget } from '../tokenizer/template-budget.js';
import { renderChatTemplate, TemplateSyntaxError, type TemplateOffLoop, type TemplateSource } from '../tokenizer/template-thread.js';
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
  /** Who asks (requestClient): the tokenizer thread takes waiting texts from clients in turn. */
  client?: string;
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
 * The conversation as vLLM's parse_chat_messages hands it to the template: each message
 * rebuilt from the fields vLLM keeps (role, content, then tool_calls and reasoning for the
 * assistant, tool_call_id for a tool result, name, tools for a developer message); content
 * as a list of text parts, which ChatTemplate.render joins with newlines for a template
 * that prints content as a string (vLLM's content format "auto"); a tool result made only
 * of text parts becomes one string; tool-call arguments decoded from JSON ({} when they
 * are not JSON), an empty tool_calls list dropped.
 *
 * Media parts have no place in a text-only template: /v1/chat/completions has already
 * fetched and refused them (serving-media.ts); /tokenize, which fetches nothing, is refused here.
 */
export function toTemplateMessages(
  messages: readonly ChatMessage[],
  contentParts = false,
  stringContentPlaceholders?: Partial<Record<'audio', string>>,
): ChatTemplateMessage[] {
  if (stringContentPlaceholders !== undefined) return messages.map((message) => toStringMessage(message, stringContentPlaceholders));
  if (contentParts) return messages.map(toPartsMessage);
  return messages.map((message, i) => {
    const content = message.content;
    if (Array.isArray(content)) {
      (content as { type: string }[]).forEach((part, j) => {
        if (part.type !== 'text' && part.type !== 'refusal') {
          throw badRequest(
            `This model accepts text only; content parts of type "${part.type}" are not supported.`,
            `messages[${i}].content[${j}]`,
          );
        }
      });
    }
    const parts = textParts(content);
    const conversationMessage: ChatTemplateMessage = {
      role: message.role,
      content: message.role === 'tool' ? parts.map((part) => part.text).join('\n') : parts,
    };
    return withKeptFields(conversationMessage, message);
  });
}

function textParts(content: ChatMessage['content']): Array<{ type: 'text'; text: string }> {
  if (content === undefined || content === null) return [];
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  return (content as Array<{ type: string; text?: string; refusal?: string }>).map((part) => ({
    type: 'text',
    text: (part.type === 'refusal' ? part.refusal : part.text) ?? '',
  }));
}

/** The fields besides role and content that vLLM's ConversationMessage carries, in its order. */
function withKeptFields(target: ChatTemplateMessage, message: ChatMessage): ChatTemplateMessage {
  const source = message as Record<string, unknown>;
  if (message.role === 'assistant') {
    const calls = source.tool_calls;
    if (Array.isArray(calls) && calls.length > 0) target.tool_calls = calls.map(templateToolCall);
    // vLLM reads `reasoning` (and hands it on under both names); `reasoning_content` is the older spelling clients still send.
    const reasoning = typeof source.reasoning === 'string' ? source.reasoning : typeof source.reasoning_content === 'string' ? source.reasoning_content : undefined;
    if (reasoning !== undefined) {
      target.reasoning = reasoning;
      target.reasoning_content = reasoning;
    }
  } else if (message.role === 'tool' && 'tool_call_id' in source) {
    target.tool_call_id = source.tool_call_id ?? null;
  }
  if (typeof source.name === 'string') target.name = source.name;
  if (message.role === 'developer') target.tools = source.tools ?? null;
  return target;
}

interface RequestToolCall {
  id: string;
  type: string;
  function: { name: string; arguments: string };
}

/** A tool call as templates expect it: arguments as the object the JSON string encodes (vLLM's _postprocess_messages). */
function templateToolCall(call: RequestToolCall): Record<string, unknown> {
  return { id: call.id, type: call.type, function: { name: call.function.name, arguments: decodedArguments(call.function.arguments) } };
}

function decodedArguments(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return {};
  }
}

/**
 * Tool definitions as vLLM hands them to the template (its pydantic model dumped): each
 * tool's declared fields first, `description` and `parameters` null when omitted, then any
 * other keys the client sent (`strict`, ...) as given. Absent tools: null, not undefined.
 */
export function templateTools(tools: readonly Record<string, unknown>[] | undefined): Record<string, unknown>[] | null {
  if (tools === undefined) return null;
  return tools.map((tool) => {
    const { type, function: fn, ...otherTool } = tool as { type: string; function: Record<string, unknown> };
    const { name, description, parameters, ...otherFunction } = fn;
    return { type, function: { name, description: description ?? null, parameters: parameters ?? null, ...otherFunction }, ...otherTool };
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
 * A request's own template is code the server would run: refused unless the operator trusts
 * request templates (trustRequestChatTemplate, vLLM's --trust-request-chat-template), with
 * vLLM's message. `chat_template` inside chat_template_kwargs counts too, as in vLLM.
 */
export function refuseUntrustedTemplate(
  trusted: boolean,
  request: { chat_template?: string; chat_template_kwargs?: Record<string, unknown> },
): void {
  if (trusted) return;
  const inKwargs = request.chat_template_kwargs?.chat_template;
  if (request.chat_template === undefined && (inKwargs === undefined || inKwargs === null)) return;
  throw badRequest(
    'Chat template is passed with request, but --trust-request-chat-template is not set. Refused request with untrusted chat template.',
    request.chat_template !== undefined ? 'chat_template' : 'chat_template_kwargs',
  );
}

/** chat_template_kwargs keys vLLM refuses: the template is chosen by the server, and rendering never tokenizes. */
const UNEXPECTED_TEMPLATE_KWARGS = ['chat_template', 'tokenize'];

/**
 * The template's variables besides the conversation, as vLLM passes them: the request's
 * chat_template_kwargs, then `tools` and `documents` (null when absent).
 */
export function chatTemplateVariables(request: {
  chat_template_kwargs?: Record<string, unknown>;
  tools?: readonly Record<string, unknown>[];
  documents?: readonly Record<string, string>[];
}): Record<string, unknown> {
  const kwargs = request.chat_template_kwargs ?? {};
  const unexpected = UNEXPECTED_TEMPLATE_KWARGS.filter((key) => key in kwargs);
  if (unexpected.length > 0) {
    throw badRequest(`Found unexpected chat template kwargs from request: {${unexpected.map((key) => `'${key}'`).join(', ')}}`, 'chat_template_kwargs');
  }
  return { ...kwargs, tools: templateTools(request.tools), documents: request.documents ?? null };
}

/**
 * A request's own template: where a thread renders templates, left as source for the thread
 * to parse and render (its code is the request's: a rendering within its steps could still
 * scan a large value per step, and parsing a 64 K template held the loop 80–360 ms; there it
 * runs under maxChatTemplateMs from the moment it is queued, issue 41, family 2); parsed here
 * otherwise (workerd, the page), where the step budget bounds it.
 */
function requestTemplate(source: string, modelTemplate: ChatTemplate | null, tokenizer: Tokenizer, offLoop: TemplateOffLoop | undefined): ChatTemplate | TemplateSource {
  const token = (id: number | null | undefined) => (id === null || id === undefined ? '' : (tokenizer.idToToken(id) ?? ''));
  const bosToken = modelTemplate?.bosToken ?? token(tokenizer.bosTokenId);
  const eosToken = modelTemplate?.eosToken ?? token(tokenizer.eosTokenIds[0]);
  const otherTokens = modelTemplate?.otherTokens;
  if (offLoop !== undefined) return { source, bosToken, eosToken, otherTokens };
  try {
    return new ChatTemplate(source, bosToken, eosToken, otherTokens);
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
  const modelChoice = options.templateVariables?.tools != null && modelTemplate?.toolUse ? modelTemplate.toolUse : modelTemplate;
  const template =
    options.templateOverride !== undefined ? requestTemplate(options.templateOverride, modelTemplate, tokenizer, options.templateOffLoop) : modelChoice;
  if (template === null) {
    throw badRequest(
      'This model has no chat template (no chat_template.jinja, and tokenizer_config.json has no "chat_template"); pass one in the request\'s "chat_template" field (the server must trust request templates: trustRequestChatTemplate).',
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
      // A multimodal model's messages are already in the shape its processor wants.
      fitContent: options.multimodal === undefined,
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
    client: options.client,
    inlinePieces: options.inlinePieces,
  });
  return { text, tokenIds };
}
