/**
 * `POST /v1/embeddings` as vLLM serves it (serving_embedding / pooling): each input (a
 * string, or token ids) becomes one vector of the served embedding model, in order; usage
 * counts the input tokens. Refusals follow vLLM's rules and words: a model served for
 * generation answers 400 ("The model does not support Embeddings API"), `dimensions` only on
 * a Matryoshka model, an input past the context only with truncate_prompt_tokens.
 */
import type { EmbeddingService } from '../../embeddings/types.js';
import { embeddingInputs, type EmbeddingRequest } from '../../protocol/openai-embeddings.js';
import type { Tokenizer } from '../../tokenizer/types.js';
import { badRequest } from '../errors.js';
import { encodePrompt } from '../prompt-tokens.js';
import { checkInputBounds } from '../../protocol/bound-checks.js';
import { inlinePieceBound, tokenizeBound, type ServingContext } from './context.js';
import type { UsageInfo } from '../usage.js';
import { usageInfo } from '../usage.js';

export interface EmbeddingResponse {
  id: string;
  object: 'list';
  created: number;
  model: string;
  data: Array<{ index: number; object: 'embedding'; embedding: number[] | string }>;
  usage: UsageInfo;
}

/** The engine's embedding service, or vLLM's answer for a model served for generation. */
export function embeddingServiceOf(ctx: ServingContext): EmbeddingService {
  const service = ctx.embeddings;
  if (service === null) {
    throw badRequest(
      `The model does not support Embeddings API: "${ctx.engine.info.id}" is served for the "generate" task. ` +
        'Serve an embedding model (a feature-extraction export; RUNNER=pooling) to use /v1/embeddings.',
    );
  }
  return service;
}

/** vLLM's checks of `dimensions` (PoolingParams): only on a Matryoshka model, and only its sizes. */
function checkDimensions(service: EmbeddingService, modelName: string, dimensions: number | undefined): void {
  if (dimensions === undefined) return;
  if (service.matryoshka === null) {
    throw badRequest(`Model "${modelName}" does not support matryoshka representation, changing output dimensions will lead to poor results.`, 'dimensions');
  }
  const sizes = service.matryoshka.dimensions;
  if (sizes !== 'any' && !sizes.includes(dimensions)) {
    throw badRequest(`Model "${modelName}" only supports [${sizes.join(', ')}] matryoshka dimensions, use other output dimensions will lead to poor results.`, 'dimensions');
  }
  if (dimensions < 1) throw badRequest('Dimensions must be greater than 0', 'dimensions');
}

/** The special tokens the tokenizer puts around a text ([CLS] … [SEP], <s> … </s>, … <|endoftext|>). */
const frames = new WeakMap<Tokenizer, { prefix: number[]; suffix: number[] }>();
function specialFrame(tokenizer: Tokenizer): { prefix: number[]; suffix: number[] } {
  let frame = frames.get(tokenizer);
  if (frame === undefined) {
    const plain = tokenizer.encode('a', { addSpecialTokens: false });
    const full = tokenizer.encode('a', { addSpecialTokens: true });
    let at = 0;
    while (at + plain.length <= full.length && !plain.every((id, i) => full[at + i] === id)) at += 1;
    frame = at + plain.length <= full.length ? { prefix: full.slice(0, at), suffix: full.slice(at + plain.length) } : { prefix: [], suffix: [] };
    frames.set(tokenizer, frame);
  }
  return frame;
}

/**
 * One input's token ids, as vLLM's renderer makes them: a text tokenized with the special
 * tokens; with truncate_prompt_tokens k, the tokenizer truncates the text's tokens so that
 * with its special tokens it has k (vLLM's tokenizers truncate on the left unless asked for
 * the right: the last tokens are kept); token ids are cut to k as given.
 */
async function inputTokenIds(
  ctx: ServingContext,
  item: { text: string } | { tokenIds: number[] },
  request: EmbeddingRequest,
  keep: number | undefined,
  param: string,
  signal: AbortSignal,
): Promise<number[]> {
  const { tokenizer } = ctx.engine;
  const context = ctx.limits.maxModelLen;
  const side = request.truncation_side ?? 'left';
  if ('tokenIds' in item) {
    if (keep === undefined || item.tokenIds.length <= keep) return item.tokenIds;
    return side === 'left' ? item.tokenIds.slice(item.tokenIds.length - keep) : item.tokenIds.slice(0, keep);
  }
  const frame = request.add_special_tokens ? specialFrame(tokenizer) : { prefix: [], suffix: [] };
  const specials = frame.prefix.length + frame.suffix.length;
  const tooLong = (count: number): never => {
    throw badRequest(
      `This model's maximum context length is ${context} tokens. However, you requested ${count} tokens in the input for embedding generation. Please reduce the length of the input.`,
      param,
    );
  };
  if (keep === undefined) {
    const ids = await encodePrompt(tokenizer, item.text, {
      addSpecialTokens: request.add_special_tokens,
      stopAfter: context,
      refuseAtLeast: tooLong,
      inlinePieces: inlinePieceBound(ctx, param),
      signal,
    });
    if (ids.length > context) tooLong(ids.length);
    return ids;
  }
  const room = Math.max(0, keep - specials);
  let content: number[];
  if (side === 'left') {
    // Only the last tokens are tokenized where the text can be cut; a piece tokenized whole is bounded by its length first.
    const bound = tokenizeBound(ctx);
    content = await encodePrompt(tokenizer, item.text, {
      addSpecialTokens: false,
      keepLast: room,
      lengthCeiling: bound.ceiling,
      refuseAtLeast: (atLeast) => bound.refuse(atLeast, param),
      inlinePieces: inlinePieceBound(ctx, param),
      signal,
    });
    content = content.slice(Math.max(0, content.length - room));
  } else {
    content = await encodePrompt(tokenizer, item.text, { addSpecialTokens: false, stopAfter: room, inlinePieces: inlinePieceBound(ctx, param), signal });
    content = content.slice(0, room);
  }
  return [...frame.prefix, ...content, ...frame.suffix];
}

/** A vector as base64 of its values' bytes: float32, little-endian unless asked for big (vLLM's embed_dtype / endianness). */
function base64Of(vector: Float32Array, endianness: 'native' | 'big' | 'little'): string {
  const bytes = new Uint8Array(vector.length * 4);
  const view = new DataView(bytes.buffer);
  const little = endianness !== 'big';
  vector.forEach((value, i) => view.setFloat32(i * 4, value, little));
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

export async function createEmbeddings(
  ctx: ServingContext,
  request: EmbeddingRequest,
  ids: { id: string; created: number },
  signal: AbortSignal,
): Promise<EmbeddingResponse> {
  const service = embeddingServiceOf(ctx);
  const modelName = ctx.engine.info.id;
  if (request.encoding_format === 'bytes' || request.encoding_format === 'bytes_only') {
    throw badRequest(`encoding_format "${request.encoding_format}" (a binary response) is not served; use "float" or "base64".`, 'encoding_format');
  }
  if (request.embed_dtype !== 'float32') {
    throw badRequest(`embed_dtype "${request.embed_dtype}" is not served; vectors are float32.`, 'embed_dtype');
  }
  if (request.priority !== 0) throw badRequest(`Got priority ${request.priority} but priority scheduling is not enabled.`, 'priority');
  checkDimensions(service, modelName, request.dimensions);
  const items = embeddingInputs(request.input);
  const { maxEmbeddingInputs } = ctx.limits.bounds;
  if (items.length > maxEmbeddingInputs) {
    throw badRequest(`The request has ${items.length} inputs; at most ${maxEmbeddingInputs} are served per request (maxEmbeddingInputs).`, 'input');
  }
  // Not checkBounds: inputs are not sequences (they share model calls, fairly), so only text size and lists are bounded here.
  checkInputBounds({ prompt: request.input }, ctx.limits.bounds);
  const context = ctx.limits.maxModelLen;
  const truncate = request.truncate_prompt_tokens;
  if (truncate !== undefined && truncate > context) {
    throw badRequest(
      `truncate_prompt_tokens=${truncate} cannot be greater than max_model_len=${context}. Please request a smaller truncation size.`,
      'truncate_prompt_tokens',
    );
  }
  const keep = truncate === undefined ? undefined : truncate === -1 ? context : truncate;

  const inputs: number[][] = [];
  for (const [index, item] of items.entries()) {
    const param = items.length === 1 && typeof request.input === 'string' ? 'input' : `input[${index}]`;
    const tokenIds = await inputTokenIds(ctx, item, request, keep, param, signal);
    if (tokenIds.length === 0) throw badRequest('The input is empty after tokenizing: it must contain at least one token.', param);
    if (tokenIds.length > context) {
      throw badRequest(
        `This model's maximum context length is ${context} tokens. However, you requested ${tokenIds.length} tokens in the input for embedding generation. Please reduce the length of the input.`,
        param,
      );
    }
    const vocab = ctx.engine.info.vocabSize;
    const outside = tokenIds.find((id) => id >= vocab);
    if (outside !== undefined) throw badRequest(`Token id ${outside} is out of vocabulary (valid ids are 0 to ${vocab - 1}).`, param);
    inputs.push(tokenIds);
  }

  // use_activation false: the pooled vectors without the model's normalization (vLLM's pooler activation off).
  const finished = await service.embed({ inputs, dimensions: request.dimensions, normalize: request.use_activation, signal });
  const promptTokens = inputs.reduce((sum, tokenIds) => sum + tokenIds.length, 0);
  return {
    id: ids.id,
    object: 'list',
    created: ids.created,
    model: modelName,
    data: finished.map((vector, index) => ({
      index,
      object: 'embedding',
      embedding: request.encoding_format === 'base64' ? base64Of(vector, request.endianness) : Array.from(vector),
    })),
    usage: usageInfo(promptTokens, 0),
  };
}
