/**
 * The tokenizer of a GGUF as the Hugging Face tokenizer.json + tokenizer_config.json pair
 * the runtime already runs (@huggingface/tokenizers), built in memory from the file's
 * `tokenizer.ggml.*` metadata, so encode, decode, special tokens and the chat template
 * follow one code path whatever the model came as.
 *
 * - `llama` (SentencePiece): pieces with scores and byte fallback. llama.cpp merges the
 *   adjacent pair whose merged piece scores highest; as BPE merges ranked by that score
 *   (deriveMerges, the llama2.c converter's). A space is put before the text and before
 *   each text run after a special token (llama.cpp's add_space_prefix), what HF's legacy
 *   Llama normalizer does.
 * - `gpt2` (byte-level BPE): the file's merges, and the pre-tokenizer regex of its
 *   `tokenizer.ggml.pre` type, as llama.cpp splits text before BPE.
 * Control (and unknown) tokens are special tokens, matched in the text as llama.cpp does
 * when it parses special tokens (its server does for prompts); user-defined tokens are
 * added tokens too. Unused pieces decode to nothing, as llama.cpp renders them. add_bos / add_eos come from the file (llama.cpp's defaults when absent).
 */
import { sentencepieceMerges, sentencepieceTokenizerJson } from '../convert/llama2c-tokenizer.js';
import type { GgufFile, GgufMetadataValue } from './gguf-file.js';
import { GgufModelError } from './llama-checkpoint.js';
import { phi3RightStrippedTokens } from './architectures/phi3.js';

/** llama_token_type. */
const TokenType = { NORMAL: 1, UNKNOWN: 2, CONTROL: 3, USER_DEFINED: 4, UNUSED: 5, BYTE: 6 } as const;

/**
 * llama.cpp's pre-tokenizer regexes (llama-vocab.cpp) by `tokenizer.ggml.pre`, each as one
 * Split; several entries are applied in turn.
 */
const GPT2_REGEX = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
const LLAMA3_REGEX =
  "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const QWEN2_REGEX =
  "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
export const BPE_PRE_TOKENIZERS: Readonly<Record<string, readonly string[]>> = {
  gpt2: [GPT2_REGEX],
  'llama-bpe': [LLAMA3_REGEX],
  'llama3': [LLAMA3_REGEX],
  smollm: ['\\p{N}', GPT2_REGEX],
  qwen2: [QWEN2_REGEX],
};

/**
 * Token texts llama.cpp ends a generation on wherever they are in the vocabulary, besides the
 * file's EOS / EOT / EOM ids (llama-vocab.cpp: Phi-3's <|end|>, Qwen's <|endoftext|> beside
 * its <|im_end|> EOS, ...); it treats them as control tokens whatever their type says.
 */
const END_OF_GENERATION_TEXTS = new Set([
  '<|eot_id|>', '<|im_end|>', '<|end|>', '<|return|>', '<|call|>', '<|flush|>', '<|calls|>', '<end_of_turn>', '<|endoftext|>',
  '</s>', '<|eom_id|>', '<EOT>', '_<EOT>', '[EOT]', '[EOS]', '<|end_of_text|>', '<end_of_utterance>', '<eos>', '<turn|>',
  '<|tool_response>', '<\uff5cend\u2581of\u2581sentence\uff5c>', '[e~[',
]);

/** Ids of END_OF_GENERATION_TEXTS in the vocabulary; <|end|> is not one when <|return|> and <|call|> (or <|calls|> and <|flush|>) are (gpt-oss, as llama.cpp). */
function endOfGenerationIds(vocab: Record<string, number>): number[] {
  const has = (text: string) => Object.hasOwn(vocab, text);
  const endIsText = (has('<|return|>') && has('<|call|>')) || (has('<|calls|>') && has('<|flush|>'));
  return [...END_OF_GENERATION_TEXTS].filter((text) => has(text) && !(endIsText && text === '<|end|>')).map((text) => vocab[text]);
}

function strings(value: GgufMetadataValue | undefined, key: string): string[] {
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) throw new GgufModelError(`${key} is missing or not a list of strings`);
  return value as string[];
}

function numbers(value: GgufMetadataValue | undefined): number[] | undefined {
  if (!Array.isArray(value)) return undefined;
  return value.map((v) => Number(v));
}

function optionalId(file: GgufFile, key: string): number | undefined {
  const value = file.metadata.get(`tokenizer.ggml.${key}`);
  return typeof value === 'number' || typeof value === 'bigint' ? Number(value) : undefined;
}

function optionalBool(file: GgufFile, key: string): boolean | undefined {
  const value = file.metadata.get(`tokenizer.ggml.${key}`);
  return typeof value === 'boolean' ? value : undefined;
}

export interface GgufTokenizerFiles {
  tokenizerJson: Record<string, unknown>;
  tokenizerConfig: Record<string, unknown>;
  /** generation_config's eos ids: EOS and the end-of-turn tokens llama.cpp stops on (the file's ids, and by text). */
  eosTokenIds: number[];
  bosTokenId: number | undefined;
  /** For the startup report, e.g. "llama (SentencePiece), 32000 tokens". */
  description: string;
}

export const SUPPORTED_TOKENIZER_MODELS = ['llama', 'gpt2'] as const;

export function ggufTokenizerFiles(file: GgufFile, modelMaxLength: number): GgufTokenizerFiles {
  const model = file.metadata.get('tokenizer.ggml.model');
  if (model !== 'llama' && model !== 'gpt2') {
    throw new GgufModelError(`tokenizer.ggml.model "${String(model)}" is not supported (supported: ${SUPPORTED_TOKENIZER_MODELS.join(', ')})`);
  }
  const tokens = strings(file.metadata.get('tokenizer.ggml.tokens'), 'tokenizer.ggml.tokens');
  const types = numbers(file.metadata.get('tokenizer.ggml.token_type')) ?? tokens.map(() => TokenType.NORMAL);
  const vocab: Record<string, number> = Object.create(null);
  tokens.forEach((token, id) => {
    // A later duplicate is unreachable by text in llama.cpp too: the first id wins.
    if (!Object.hasOwn(vocab, token)) vocab[token] = id;
  });
  const bos = optionalId(file, 'bos_token_id');
  const eos = optionalId(file, 'eos_token_id');
  const unk = optionalId(file, 'unknown_token_id');
  const pad = optionalId(file, 'padding_token_id');
  const isSpm = model === 'llama';
  const addBos = optionalBool(file, 'add_bos_token') ?? isSpm;
  const addEos = optionalBool(file, 'add_eos_token') ?? false;
  const addSpacePrefix = optionalBool(file, 'add_space_prefix') ?? isSpm;

  const endOfGeneration = endOfGenerationIds(vocab);
  const special = (id: number) => types[id] === TokenType.CONTROL || types[id] === TokenType.UNKNOWN || endOfGeneration.includes(id);
  const addedIds = tokens.map((_, id) => id).filter((id) => special(id) || types[id] === TokenType.USER_DEFINED || id === bos || id === eos);
  // llama.cpp renders an unused piece (and one of no known type) as nothing, special tokens
  // asked for or not: the [PAD151700] fillers of padded vocabularies never show as text.
  const rendered = new Set<number>([TokenType.NORMAL, TokenType.UNKNOWN, TokenType.CONTROL, TokenType.USER_DEFINED, TokenType.BYTE]);
  const addedSet = new Set(addedIds);
  const unrenderedIds = tokens.map((_, id) => id).filter((id) => !rendered.has(types[id] as never) && !addedSet.has(id));
  const modelName = file.metadata.get('general.name');
  const rightStripped = phi3RightStrippedTokens(typeof modelName === 'string' ? modelName : undefined, tokens, addedIds.filter((id) => special(id) || types[id] === TokenType.USER_DEFINED));
  const addedTokens = addedIds.map((id) => ({
    id,
    content: tokens[id],
    single_word: false,
    lstrip: false,
    rstrip: rightStripped.has(id),
    normalized: false,
    special: types[id] !== TokenType.USER_DEFINED,
  }));

  const name = (id: number | undefined) => (id === undefined ? null : tokens[id] ?? null);
  const postProcessor = () => {
    const single: unknown[] = [];
    const specialTokens: Record<string, unknown> = {};
    if (addBos && bos !== undefined) {
      single.push({ SpecialToken: { id: tokens[bos], type_id: 0 } });
      specialTokens[tokens[bos]] = { id: tokens[bos], ids: [bos], tokens: [tokens[bos]] };
    }
    single.push({ Sequence: { id: 'A', type_id: 0 } });
    if (addEos && eos !== undefined) {
      single.push({ SpecialToken: { id: tokens[eos], type_id: 0 } });
      specialTokens[tokens[eos]] = { id: tokens[eos], ids: [eos], tokens: [tokens[eos]] };
    }
    const pair = [...single, ...single.map((part) => ('Sequence' in (part as object) ? { Sequence: { id: 'B', type_id: 1 } } : part))];
    return { type: 'TemplateProcessing', single, pair, special_tokens: specialTokens };
  };

  let tokenizerJson: Record<string, unknown>;
  if (isSpm) {
    const scores = numbers(file.metadata.get('tokenizer.ggml.scores'));
    if (!scores || scores.length !== tokens.length) throw new GgufModelError('tokenizer.ggml.scores is missing or not one per token');
    const mergeable = (id: number) => types[id] === TokenType.NORMAL || types[id] === TokenType.USER_DEFINED;
    tokenizerJson = sentencepieceTokenizerJson({
      addedTokens,
      postProcessor: postProcessor(),
      unkToken: unk !== undefined ? tokens[unk] : null,
      vocab,
      merges: sentencepieceMerges(tokens, scores, mergeable),
      addSpacePrefix,
    });
  } else {
    const merges = strings(file.metadata.get('tokenizer.ggml.merges'), 'tokenizer.ggml.merges');
    const pre = String(file.metadata.get('tokenizer.ggml.pre') ?? 'gpt2');
    const regexes = BPE_PRE_TOKENIZERS[pre === 'default' ? 'gpt2' : pre];
    if (!regexes) {
      throw new GgufModelError(`tokenizer.ggml.pre "${pre}" is not supported (supported: ${Object.keys(BPE_PRE_TOKENIZERS).join(', ')}, default)`);
    }
    tokenizerJson = {
      version: '1.0',
      truncation: null,
      padding: null,
      added_tokens: addedTokens,
      normalizer: null,
      pre_tokenizer: {
        type: 'Sequence',
        pretokenizers: [
          ...regexes.map((regex) => ({ type: 'Split', pattern: { Regex: regex }, behavior: 'Isolated', invert: false })),
          { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false },
        ],
      },
      post_processor: postProcessor(),
      decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
      model: {
        type: 'BPE',
        dropout: null,
        unk_token: null,
        continuing_subword_prefix: null,
        end_of_word_suffix: null,
        fuse_unk: false,
        byte_fallback: false,
        ignore_merges: pre === 'llama-bpe' || pre === 'llama3',
        vocab,
        merges,
      },
    };
  }

  const template = file.metadata.get('tokenizer.chat_template');
  const tokenizerConfig: Record<string, unknown> = {
    add_bos_token: addBos,
    add_eos_token: addEos,
    bos_token: name(bos),
    eos_token: name(eos),
    unk_token: name(unk),
    pad_token: name(pad),
    added_tokens_decoder: Object.fromEntries(addedTokens.map(({ id, ...rest }) => [String(id), rest])),
    model_max_length: modelMaxLength,
    tokenizer_class: isSpm ? 'LlamaTokenizer' : 'PreTrainedTokenizerFast',
    clean_up_tokenization_spaces: false,
    ...(isSpm ? { legacy: true } : {}),
    spaces_between_special_tokens: false,
    // Read by HfTokenizer (UNRENDERED_TOKEN_IDS in src/tokenizer/hf-tokenizer.ts).
    ...(unrenderedIds.length > 0 ? { unrendered_token_ids: unrenderedIds } : {}),
    ...(typeof template === 'string' ? { chat_template: template } : {}),
  };
  // llama.cpp ends a generation on EOS and on the end-of-turn / end-of-message tokens it knows.
  const eosTokenIds = [...new Set([eos, optionalId(file, 'eot_token_id'), optionalId(file, 'eom_token_id'), ...endOfGeneration].filter((id): id is number => id !== undefined))];
  return {
    tokenizerJson,
    tokenizerConfig,
    eosTokenIds,
    bosTokenId: bos,
    description: `${model} (${isSpm ? 'SentencePiece, byte fallback' : `byte-level BPE, pre-tokenizer ${String(file.metadata.get('tokenizer.ggml.pre') ?? 'gpt2')}`}), ${tokens.length} tokens, add_bos ${addBos}, add_eos ${addEos}${typeof template === 'string' ? ', chat template from the file' : ', no chat template'}`,
  };
}
