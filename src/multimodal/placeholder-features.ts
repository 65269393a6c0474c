import type { PlaceholderEmbeds } from '../onnx/placeholder-embeds.js';

/**
 * Runs an encoder over a prompt's media parts one after another and joins their features,
 * in prompt order, as the embeddings of `tokenId`'s placeholders (the engine splices the
 * k-th feature row in at the k-th such token).
 */
export async function placeholderFeatures<Part>(
  parts: readonly Part[],
  tokenId: number,
  encode: (part: Part) => Promise<Float32Array>,
): Promise<PlaceholderEmbeds[]> {
  if (parts.length === 0) return [];
  const features: Float32Array[] = [];
  for (const part of parts) features.push(await encode(part));
  const embeds = new Float32Array(features.reduce((sum, part) => sum + part.length, 0));
  let offset = 0;
  for (const part of features) {
    embeds.set(part, offset);
    offset += part.length;
  }
  return [{ tokenId, embeds }];
}
