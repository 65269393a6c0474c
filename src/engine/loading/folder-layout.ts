/**
 * The transformers 5 model-folder layout, folded into the fields the engine reads, so both
 * layouts serve alike. transformers 5's save_pretrained writes:
 * - the chat template in `chat_template.jinja` (no "chat_template" in tokenizer_config.json),
 *   other named templates in `additional_chat_templates/<name>.jinja`; processors of older
 *   releases wrote `chat_template.json` ({"chat_template": ...});
 * - a processor's sub-processors nested in `processor_config.json` ("image_processor",
 *   "video_processor", ...) instead of `preprocessor_config.json`;
 * - added special tokens as `extra_special_tokens` in tokenizer_config.json (a list, or
 *   attribute → token such as {"image_token": "<image>"}).
 * As transformers does when it loads a folder, a template file wins over the config's field.
 */

export const CHAT_TEMPLATE_FILES = {
  jinja: 'chat_template.jinja',
  json: 'chat_template.json',
  /** A folder of `<name>.jinja` files. */
  additionalDir: 'additional_chat_templates/',
} as const;

export interface ChatTemplateFiles {
  /** chat_template.jinja's text. */
  jinja?: string;
  /** chat_template.json, parsed. */
  json?: unknown;
  /** additional_chat_templates/<name>.jinja by name. */
  additional?: Record<string, string>;
}

type JsonObject = Record<string, unknown>;

/** tokenizer_config.json with the template files' templates as its "chat_template" (a string, or named templates). */
export function withChatTemplateFiles(tokenizerConfig: JsonObject, files: ChatTemplateFiles): JsonObject {
  const jsonTemplate = files.json !== null && typeof files.json === 'object' && !Array.isArray(files.json) ? (files.json as JsonObject).chat_template : undefined;
  const main = files.jinja ?? (typeof jsonTemplate === 'string' || Array.isArray(jsonTemplate) ? jsonTemplate : undefined);
  const additional = Object.entries(files.additional ?? {});
  if (main === undefined && additional.length === 0) return tokenizerConfig;
  const named = new Map<string, string>();
  const base = main ?? tokenizerConfig.chat_template;
  if (typeof base === 'string') named.set('default', base);
  else if (Array.isArray(base)) {
    for (const entry of base as Array<{ name?: unknown; template?: unknown }>) {
      if (entry && typeof entry.name === 'string' && typeof entry.template === 'string') named.set(entry.name, entry.template);
    }
  }
  for (const [name, template] of additional) named.set(name, template);
  const chatTemplate = named.size === 1 && named.has('default') ? named.get('default')! : [...named].map(([name, template]) => ({ name, template }));
  return { ...tokenizerConfig, chat_template: chatTemplate };
}

/**
 * The image processor's settings: preprocessor_config.json, or processor_config.json's nested
 * "image_processor" (transformers 5). SmolVLM's video sampling rides along from a nested
 * "video_processor" when the image settings have none.
 */
export function preprocessorSettings(preprocessorConfig: JsonObject | undefined, processorConfig: JsonObject | undefined): JsonObject | undefined {
  if (preprocessorConfig !== undefined) return preprocessorConfig;
  const nested = objectField(processorConfig, 'image_processor') ?? objectField(processorConfig, 'feature_extractor');
  if (nested === undefined) return undefined;
  const video = objectField(processorConfig, 'video_processor');
  const sampling = video === undefined ? undefined : videoSamplingOf(video);
  return sampling === undefined || nested.video_sampling !== undefined ? nested : { ...nested, video_sampling: sampling };
}

/** SmolVLM's video sampling from a video processor's saved settings ({video_sampling} or its fps / num_frames attributes). */
function videoSamplingOf(video: JsonObject): unknown {
  if (video.video_sampling !== undefined) return video.video_sampling;
  if (typeof video.fps === 'number' && typeof video.num_frames === 'number') return { fps: video.fps, max_frames: video.num_frames };
  return undefined;
}

/**
 * processor_config.json with the tokenizer's `extra_special_tokens` image token as its
 * "image_token" when it names none: transformers 5 processors take the placeholder from the
 * tokenizer's attribute (LLaVA's `<image>` unless it says otherwise).
 */
export function processorSettings(processorConfig: JsonObject | undefined, tokenizerConfig: JsonObject): JsonObject | undefined {
  const imageToken = extraSpecialToken(tokenizerConfig, 'image_token');
  if (imageToken === undefined || (processorConfig !== undefined && processorConfig.image_token !== undefined)) return processorConfig;
  return { ...processorConfig, image_token: imageToken };
}

/** A token string tokenizer_config.json names among its extra special tokens (e.g. "image_token"), if any. */
export function extraSpecialToken(tokenizerConfig: JsonObject, attribute: string): string | undefined {
  const extra = objectField(tokenizerConfig, 'extra_special_tokens');
  const value = extra?.[attribute];
  if (typeof value === 'string') return value;
  if (value !== null && typeof value === 'object' && typeof (value as JsonObject).content === 'string') return (value as JsonObject).content as string;
  return undefined;
}

function objectField(object: JsonObject | undefined, key: string): JsonObject | undefined {
  const value = object?.[key];
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as JsonObject) : undefined;
}

/** Whether transformers 5 wrote the folder (its config.json's transformers_version, or tokenizer_config.json's "backend"). */
export function writtenByTransformers5(config: JsonObject, tokenizerConfig: JsonObject): boolean {
  const version = typeof config.transformers_version === 'string' ? Number.parseInt(config.transformers_version, 10) : Number.NaN;
  return version >= 5 || typeof tokenizerConfig.backend === 'string';
}

const LLAMA_TOKENIZER_CLASSES = new Set(['LlamaTokenizer', 'LlamaTokenizerFast']);

/**
 * tokenizer.json as transformers 5 runs it for a folder it wrote. Its tokenizer classes with
 * their own pipeline rebuild the pre-tokenizer from tokenizer_config.json instead of taking
 * tokenizer.json's: LlamaTokenizer's Metaspace prepends "▁" to the first piece only
 * ("first") unless `legacy` is true, and never when `add_prefix_space` is false — so a
 * folder re-saved by transformers 5 (which drops "legacy") tokenizes "<s>User" without the
 * "▁" transformers 4 put after a special token. Other classes are taken as their file says.
 */
export function tokenizerJsonAsLoaded(tokenizerJson: JsonObject, tokenizerConfig: JsonObject, config: JsonObject): JsonObject {
  if (!writtenByTransformers5(config, tokenizerConfig)) return tokenizerJson;
  if (!LLAMA_TOKENIZER_CLASSES.has(String(tokenizerConfig.tokenizer_class))) return tokenizerJson;
  const preTokenizer = objectField(tokenizerJson, 'pre_tokenizer');
  if (preTokenizer?.type !== 'Metaspace') return tokenizerJson;
  const prependScheme = tokenizerConfig.add_prefix_space === false ? 'never' : tokenizerConfig.legacy === true ? 'always' : 'first';
  return { ...tokenizerJson, normalizer: null, pre_tokenizer: { ...preTokenizer, prepend_scheme: prependScheme, split: false } };
}
