import { Template } from './jinja/index.js';
import { TemplateBudgetError, withTemplateBudget, type TemplateBudget } from './template-budget.js';
import { detectContentFormat, type ContentFormat } from './template-content-format.js';

/** A content part as multimodal templates iterate them: {"type": "text", "text": ...} or {"type": "image"}. */
export interface ChatTemplateContentPart {
  type: string;
  text?: string;
  [field: string]: unknown;
}

/**
 * One chat message as the template sees it (vLLM's ConversationMessage): content a string
 * or a list of parts; other fields (name, tool_calls, tool_call_id, reasoning) for
 * templates that read them.
 */
export interface ChatTemplateMessage {
  role: string;
  content: string | ChatTemplateContentPart[];
  [field: string]: unknown;
}

export interface ChatTemplateOptions {
  /** Append the opening of an assistant turn so the model answers (HF add_generation_prompt). */
  addGenerationPrompt: boolean;
  /**
   * Leave the final message open so the model continues it: the rendered text is cut
   * right after that message's content, dropping whatever the template closes it with
   * (EOS, end-of-turn markers). Same rule as transformers' apply_chat_template.
   */
  continueFinalMessage: boolean;
  /** Extra template variables (vLLM's chat_template_kwargs); they may not replace messages or add_generation_prompt. */
  kwargs?: Record<string, unknown>;
  /**
   * Messages whose content is a list of parts get it in the shape the template wants
   * (contentFormat): joined into one string (text parts, newline-separated) for a "string"
   * template, as vLLM prepares it. False: content reaches the template as given.
   */
  fitContent?: boolean;
  /** Steps and output the rendering may take; past it, a ChatTemplateError naming the bound. */
  budget?: TemplateBudget;
}

/** Without a request's own limits: generous for any real chat template, but finite. */
export const DEFAULT_TEMPLATE_BUDGET: TemplateBudget = { maxSteps: 100_000, maxOutputChars: 4 * 1024 * 1024 };

/** Raised for a conversation the template refuses or cannot render: the client's fault. */
export class ChatTemplateError extends Error {
  constructor(
    message: string,
    /** Set when the rendering ran past its budget: which bound stopped it (time: the thread's deadline, template-thread.ts). */
    readonly budgetBound?: 'steps' | 'output' | 'time',
  ) {
    super(message);
    this.name = 'ChatTemplateError';
  }
}

/**
 * A compiled Jinja chat template with the special-token strings it is rendered with.
 * The template writes BOS itself (`{{ bos_token }}`), so its output must be encoded
 * without adding special tokens again.
 */
export class ChatTemplate {
  private readonly compiled: Template;
  /** The model's "tool_use" template (transformers' named templates): rendered instead when a request passes tools. */
  toolUse: ChatTemplate | null = null;
  /** How message content reaches this template (vLLM's `--chat-template-content-format auto`). */
  readonly contentFormat: ContentFormat;

  constructor(
    readonly source: string,
    readonly bosToken: string,
    readonly eosToken: string,
    /** The tokenizer's other special tokens by transformers' names (unk_token, pad_token, ...): templates read them too. */
    readonly otherTokens: Readonly<Record<string, string>> = {},
  ) {
    // Parse now so a broken template fails at startup, not on the first chat request.
    this.compiled = new Template(source);
    this.contentFormat = detectContentFormat(this.compiled.parsed);
  }

  render(messages: readonly ChatTemplateMessage[], options: ChatTemplateOptions): string {
    if (options.addGenerationPrompt && options.continueFinalMessage) {
      throw new ChatTemplateError('Cannot set both `continue_final_message` and `add_generation_prompt` to True.');
    }
    const finalMessage = messages.at(-1);
    if (options.continueFinalMessage && finalMessage === undefined) {
      throw new ChatTemplateError('`continue_final_message` needs at least one message to continue.');
    }
    const fit = options.fitContent !== false && this.contentFormat === 'string';
    let rendered: string;
    try {
      rendered = withTemplateBudget(options.budget ?? DEFAULT_TEMPLATE_BUDGET, () =>
        // As transformers' render_jinja_template: the special tokens, then the caller's variables, then the conversation.
        this.compiled.render({
          ...this.otherTokens,
          bos_token: this.bosToken,
          eos_token: this.eosToken,
          ...options.kwargs,
          messages: messages.map((message) => (fit && Array.isArray(message.content) ? { ...message, content: contentText(message.content) } : { ...message })),
          add_generation_prompt: options.addGenerationPrompt,
        }),
      );
    } catch (error) {
      if (error instanceof TemplateBudgetError) throw new ChatTemplateError(`The chat template was stopped: ${error.message}.`, error.bound);
      // Templates reject conversations with raise_exception(...) (e.g. roles must alternate).
      const reason = error instanceof Error ? error.message : String(error);
      throw new ChatTemplateError(`The chat template could not render these messages: ${reason}`);
    }
    return options.continueFinalMessage && finalMessage ? cutAfterFinalMessage(rendered, contentText(finalMessage.content)) : rendered;
  }
}

function contentText(content: ChatTemplateMessage['content']): string {
  if (typeof content === 'string') return content;
  return content.flatMap((part) => (typeof part.text === 'string' ? [part.text] : [])).join('\n');
}

function cutAfterFinalMessage(rendered: string, content: string): string {
  // Templates often strip or trim the content; fall back to the trimmed form as transformers does.
  for (const needle of [content, content.trim()]) {
    if (needle === '') continue;
    const at = rendered.lastIndexOf(needle);
    if (at >= 0) return rendered.slice(0, at + needle.length);
  }
  if (content.trim() === '') return rendered;
  throw new ChatTemplateError(
    '`continue_final_message` is set but the final message does not appear in the chat after applying the chat template.',
  );
}

/** transformers' special_tokens_map names besides BOS and EOS, all passed to the template. */
const OTHER_SPECIAL_TOKENS = ['unk_token', 'sep_token', 'pad_token', 'cls_token', 'mask_token'] as const;

/** A token given as a plain string or as an AddedToken object ({"content": "<s>", ...}). */
function tokenString(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object' && typeof (value as { content?: unknown }).content === 'string') {
    return (value as { content: string }).content;
  }
  return undefined;
}

/**
 * The template sources in tokenizer_config.json: a string, or a list of named templates
 * (transformers' multi-template format, also what the transformers 5 layout's
 * additional_chat_templates/ fold into) of which "default" is the chat one.
 */
function templateSources(value: unknown): { main?: string; toolUse?: string } {
  if (typeof value === 'string') return { main: value };
  if (Array.isArray(value)) {
    const named = value.filter(
      (entry): entry is { name: string; template: string } =>
        !!entry && typeof entry === 'object' && typeof entry.name === 'string' && typeof entry.template === 'string',
    );
    return { main: named.find((entry) => entry.name === 'default')?.template, toolUse: named.find((entry) => entry.name === 'tool_use')?.template };
  }
  return {};
}

/**
 * Builds the chat template of a model from its tokenizer_config.json; null when the
 * model has none. `fallbackTokens` supplies BOS/EOS strings the config leaves out
 * (e.g. from the tokenizer's vocabulary).
 */
export function chatTemplateFromTokenizerConfig(
  tokenizerConfig: Record<string, unknown>,
  fallbackTokens: { bosToken?: string; eosToken?: string } = {},
): ChatTemplate | null {
  const { main, toolUse } = templateSources(tokenizerConfig.chat_template);
  if (main === undefined) return null;
  const bosToken = tokenString(tokenizerConfig.bos_token) ?? fallbackTokens.bosToken ?? '';
  const eosToken = tokenString(tokenizerConfig.eos_token) ?? fallbackTokens.eosToken ?? '';
  const otherTokens: Record<string, string> = {};
  for (const name of OTHER_SPECIAL_TOKENS) {
    const token = tokenString(tokenizerConfig[name]);
    if (token !== undefined) otherTokens[name] = token;
  }
  const template = new ChatTemplate(main, bosToken, eosToken, otherTokens);
  if (toolUse !== undefined) template.toolUse = new ChatTemplate(toolUse, bosToken, eosToken, otherTokens);
  return template;
}
