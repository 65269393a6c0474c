/**
 * The tokens llama.cpp ends a generation on besides the file's EOS / EOT / EOM ids: it finds
 * them by their text (llama-vocab.cpp, "auto-detect special tokens by text"; Gemma's
 * `<end_of_turn>` has no id key in its files) and makes each a control token, so they are
 * matched as special tokens in a prompt too. This engine reads a file the same way, for the
 * texts of the vocabularies of the architectures it serves (llama.cpp's list also has
 * model-specific ones, e.g. o200k_harmony's, with exceptions of their own).
 */
const END_OF_GENERATION_TEXTS = new Set([
  '<|eot_id|>',
  '<|im_end|>',
  '<|end|>',
  '<end_of_turn>',
  '<|endoftext|>',
  '</s>',
  '<|eom_id|>',
  '<EOT>',
  '_<EOT>',
  '<|end_of_text|>',
  '<end_of_utterance>',
]);

/** Ids of the vocabulary's tokens llama.cpp treats as end of generation by their text. */
export function endOfGenerationIdsByText(tokens: readonly string[]): number[] {
  const ids: number[] = [];
  tokens.forEach((token, id) => {
    if (END_OF_GENERATION_TEXTS.has(token)) ids.push(id);
  });
  return ids;
}
