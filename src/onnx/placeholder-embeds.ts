/**
 * Embeddings that replace the token embeddings at a placeholder's positions (a VLM's
 * image features at its `<image>` tokens), in prompt order: the k-th placeholder token
 * gets row k of `embeds` ([placeholders, hidden]).
 */
export interface PlaceholderEmbeds {
  tokenId: number;
  embeds: Float32Array;
}
