/**
 * Converts a llama2.c tokenizer file (`tok512.bin`, `tokenizer.bin`) into the Hugging Face
 * `tokenizer.json` + `tokenizer_config.json` pair, shaped like the HF conversions of Llama 2,
 * so the runtime loads it with the same code path as any exported HF model.
 *
 * llama2.c layout: int32 max_token_length, then per token: float32 score, int32 byte length,
 * the UTF-8 bytes. Ids 0..2 are <unk>, <s>, </s>; 3..258 are <0x00>..<0xFF>.
 */

const SENTENCEPIECE_SPACE = '\u2581';
const BYTE_PIECE = /^<0x[0-9A-F]{2}>$/;

/** llama2.c stores the BOS/EOS pieces wrapped in newlines; HF vocabularies use the bare names. */
const RENAMED_PIECES: ReadonlyMap<string, string> = new Map([
  ['\n<s>\n', '<s>'],
  ['\n</s>\n', '</s>'],
]);

const UNK = '<unk>';
const BOS = '<s>';
const EOS = '</s>';

/**
 * The model only ever saw TinyStories text, never a chat format, so any role markers
 * ("User:", "[INST]") would be foreign text that derails it. The template therefore renders
 * the conversation as plain story text: BOS, the system message(s) first, then the other
 * turns in order, separated by newlines. add_generation_prompt adds nothing: the assistant's
 * reply simply continues the text (a user message "Once upon a time" continues as a story).
 * The template emits BOS itself and the chat path encodes it with addSpecialTokens false,
 * so there is exactly one BOS. Content may be a string or a list of {type: "text"} parts;
 * messages without content (an assistant turn holding only tool calls) are left out.
 */
export const STORY_CHAT_TEMPLATE = [
  '{{- bos_token -}}',
  '{%- set ns = namespace(started=false) -%}',
  "{%- for pass in ['system', 'other'] -%}",
  '{%- for message in messages -%}',
  "{%- if (message['role'] == 'system') == (pass == 'system') and message['content'] is not none -%}",
  '{%- if ns.started -%}{{- "\\n" -}}{%- endif -%}',
  '{%- set ns.started = true -%}',
  "{%- if message['content'] is string -%}",
  "{{- message['content'] -}}",
  '{%- else -%}',
  "{%- for part in message['content'] -%}",
  "{%- if part['type'] == 'text' -%}{{- part['text'] -}}{%- endif -%}",
  '{%- endfor -%}',
  '{%- endif -%}',
  '{%- endif -%}',
  '{%- endfor -%}',
  '{%- endfor -%}',
].join('');

export interface Llama2cVocabEntry {
  /** The piece as stored in the file, decoded as UTF-8 (spaces are plain " "). */
  readonly raw: string;
  readonly score: number;
}

export function parseLlama2cTokenizer(tokBin: Uint8Array): { maxTokenLength: number; entries: Llama2cVocabEntry[] } {
  const view = new DataView(tokBin.buffer, tokBin.byteOffset, tokBin.byteLength);
  const utf8 = new TextDecoder('utf-8', { fatal: true });
  let offset = 0;
  const need = (bytes: number) => {
    if (offset + bytes > tokBin.byteLength) {
      throw new Error(`llama2.c tokenizer truncated at byte ${offset} (needed ${bytes} more)`);
    }
  };
  need(4);
  const maxTokenLength = view.getInt32(offset, true);
  offset += 4;
  const entries: Llama2cVocabEntry[] = [];
  while (offset < tokBin.byteLength) {
    need(8);
    const score = view.getFloat32(offset, true);
    const length = view.getInt32(offset + 4, true);
    offset += 8;
    if (length < 0) throw new Error(`llama2.c tokenizer: negative piece length at token ${entries.length}`);
    need(length);
    entries.push({ raw: utf8.decode(tokBin.subarray(offset, offset + length)), score });
    offset += length;
  }
  return { maxTokenLength, entries };
}

/** A llama2.c piece as Hugging Face and GGUF vocabularies spell it (▁ for spaces, bare <s> and </s>). */
export function hfPiece(raw: string): string {
  return RENAMED_PIECES.get(raw) ?? raw.replaceAll(' ', SENTENCEPIECE_SPACE);
}

/**
 * sentencepiece BPE repeatedly merges the adjacent pair whose merged piece scores highest.
 * HF BPE applies the lowest-ranked merge instead, so every split of a vocab piece into two
 * vocab pieces becomes a merge, ranked by the merged piece's score (highest first). Ties:
 * lower merged id first, then lower left-part id, so the list is deterministic.
 */
export function deriveMerges(pieces: readonly string[], scores: readonly number[], mergeable: (id: number) => boolean): string[] {
  const idOf = new Map<string, number>();
  pieces.forEach((piece, id) => {
    if (mergeable(id)) idOf.set(piece, id);
  });
  const candidates: { left: string; right: string; mergedId: number; leftId: number }[] = [];
  pieces.forEach((piece, mergedId) => {
    if (!mergeable(mergedId)) return;
    const chars = Array.from(piece);
    for (let cut = 1; cut < chars.length; cut++) {
      const left = chars.slice(0, cut).join('');
      const right = chars.slice(cut).join('');
      const leftId = idOf.get(left);
      if (leftId !== undefined && idOf.has(right)) candidates.push({ left, right, mergedId, leftId });
    }
  });
  candidates.sort(
    (a, b) => scores[b.mergedId] - scores[a.mergedId] || a.mergedId - b.mergedId || a.leftId - b.leftId,
  );
  // The classic "left right" string form is readable by every tokenizers version; it is only
  // ambiguous if a piece contains an ASCII space, which the ▁ substitution rules out.
  return candidates.map(({ left, right }) => `${left} ${right}`);
}

/**
 * BPE merges that reproduce SentencePiece's BPE encoder (sentencepiece's bpe_model.cc, and
 * llama.cpp's llm_tokenizer_spm): the text starts as single characters and the adjacent pair
 * whose concatenation is a piece, of the highest score, merges first, whether or not each
 * half is a piece itself. A piece such as "\n\n" in a vocabulary without "\n" (gemma2-style)
 * is reached from two characters that are not pieces; deriveMerges (llama2.c's rule: only
 * pieces merge) never would. `mergeable` pieces are the targets; each half is a single
 * character or another mergeable piece. The tokenizer's BPE merges strings, so a character
 * outside the vocabulary can still merge, and one left alone falls back to bytes.
 */
export function sentencepieceMerges(pieces: readonly string[], scores: readonly number[], mergeable: (id: number) => boolean): string[] {
  const idOf = new Map<string, number>();
  pieces.forEach((piece, id) => {
    // A piece holding an ASCII space is never reached (spaces become "▁" first) and would make the "left right" form ambiguous.
    if (mergeable(id) && !idOf.has(piece) && !piece.includes(' ')) idOf.set(piece, id);
  });
  const candidates: { left: string; right: string; mergedId: number; cut: number }[] = [];
  for (const [piece, mergedId] of idOf) {
    const chars = Array.from(piece);
    for (let cut = 1; cut < chars.length; cut++) {
      const left = chars.slice(0, cut).join('');
      const right = chars.slice(cut).join('');
      if ((cut === 1 || idOf.has(left)) && (cut === chars.length - 1 || idOf.has(right))) candidates.push({ left, right, mergedId, cut });
    }
  }
  candidates.sort((a, b) => scores[b.mergedId] - scores[a.mergedId] || a.mergedId - b.mergedId || a.cut - b.cut);
  return candidates.map(({ left, right }) => `${left} ${right}`);
}

function addedToken(id: number, content: string) {
  return { id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true };
}

/**
 * tokenizer.json of a SentencePiece vocabulary as BPE with byte fallback: the dummy prefix
 * (unless `addSpacePrefix` is false) and "▁" for spaces, exactly as HF's Llama 2 (legacy)
 * conversion. Shared with the GGUF tokenizer bridge (src/gguf/gguf-tokenizer.ts).
 */
export function sentencepieceTokenizerJson(parts: {
  addedTokens: readonly object[];
  postProcessor: object;
  unkToken: string | null;
  vocab: Record<string, number>;
  merges: string[];
  addSpacePrefix?: boolean;
}): Record<string, unknown> {
  const prefix = parts.addSpacePrefix ?? true;
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: parts.addedTokens,
    normalizer: {
      type: 'Sequence',
      normalizers: [
        ...(prefix ? [{ type: 'Prepend', prepend: SENTENCEPIECE_SPACE }] : []),
        { type: 'Replace', pattern: { String: ' ' }, content: SENTENCEPIECE_SPACE },
      ],
    },
    pre_tokenizer: null,
    post_processor: parts.postProcessor,
    decoder: {
      type: 'Sequence',
      decoders: [
        { type: 'Replace', pattern: { String: SENTENCEPIECE_SPACE }, content: ' ' },
        { type: 'ByteFallback' },
        { type: 'Fuse' },
        ...(prefix ? [{ type: 'Strip', content: ' ', start: 1, stop: 0 }] : []),
      ],
    },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: parts.unkToken,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: true,
      byte_fallback: true,
      ignore_merges: false,
      vocab: parts.vocab,
      merges: parts.merges,
    },
  };
}

export function convertLlama2cTokenizer(tokBin: Uint8Array): { tokenizerJson: object; tokenizerConfig: object } {
  const { entries } = parseLlama2cTokenizer(tokBin);
  const pieces = entries.map((entry) => hfPiece(entry.raw));
  const scores = entries.map((entry) => entry.score);
  if (pieces[0] !== UNK || pieces[1] !== BOS || pieces[2] !== EOS) {
    throw new Error(`expected ids 0..2 to be ${UNK} ${BOS} ${EOS}, got ${JSON.stringify(pieces.slice(0, 3))}`);
  }

  // No prototype: pieces such as "toString", "constructor" or "__proto__" are ordinary keys.
  const vocab: Record<string, number> = Object.create(null);
  pieces.forEach((piece, id) => {
    if (Object.hasOwn(vocab, piece)) {
      throw new Error(`duplicate piece ${JSON.stringify(piece)} at ids ${vocab[piece]} and ${id}`);
    }
    vocab[piece] = id;
  });

  const specialIds = new Set([0, 1, 2]);
  // Byte tokens and special tokens never take part in merges: llama2.c only merges pieces it
  // looked up as text, and "<0x41>"-style names are not text.
  const mergeable = (id: number) => !specialIds.has(id) && !BYTE_PIECE.test(pieces[id]);
  const merges = deriveMerges(pieces, scores, mergeable);

  const addedTokens = [addedToken(0, UNK), addedToken(1, BOS), addedToken(2, EOS)];

  const tokenizerJson = sentencepieceTokenizerJson({
    addedTokens,
    postProcessor: {
      type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: BOS, type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
      pair: [
        { SpecialToken: { id: BOS, type_id: 0 } },
        { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: BOS, type_id: 1 } },
        { Sequence: { id: 'B', type_id: 1 } },
      ],
      special_tokens: { [BOS]: { id: BOS, ids: [1], tokens: [BOS] } },
    },
    unkToken: UNK,
    vocab,
    merges,
  });

  const tokenizerConfig = {
    add_bos_token: true,
    add_eos_token: false,
    bos_token: BOS,
    eos_token: EOS,
    unk_token: UNK,
    pad_token: null,
    added_tokens_decoder: Object.fromEntries(
      addedTokens.map(({ id, ...rest }) => [String(id), rest]),
    ),
    model_max_length: 512,
    tokenizer_class: 'LlamaTokenizer',
    clean_up_tokenization_spaces: false,
    // legacy: the dummy prefix is added to every text segment, including right after a
    // special token, which is what llama2.c does after BOS and what the chat template needs.
    legacy: true,
    spaces_between_special_tokens: false,
    sp_model_kwargs: {},
    chat_template: STORY_CHAT_TEMPLATE,
  };

  return { tokenizerJson, tokenizerConfig };
}
