/** Prompt length limits, checked after tokenization. */
import { invalidRequest } from '../common/protocol-error.js';

export interface PromptLimits {
  /** Server config: longest prompt (MindIE maxInputTokenLen). */
  maxInputTokenLen: number;
  /** Server config: longest prompt + output (MindIE maxSeqLen); unset: the model's context. */
  maxSeqLen?: number;
  /** The model's context length (config.json max_position_embeddings). */
  maxModelLen: number;
}

/** MindIE's fixed cap on prompt tokens ("1 MB" of tokens). */
export const MINDIE_PROMPT_TOKEN_CAP = 1024 * 1024;

/**
 * The context length the OpenAI endpoints report and enforce: the model's, lowered by
 * the server's maxSeqLen as vLLM's --max-model-len lowers it.
 */
export function servedMaxModelLen(limits: Pick<PromptLimits, 'maxSeqLen' | 'maxModelLen'>): number {
  return Math.min(limits.maxModelLen, limits.maxSeqLen ?? Number.POSITIVE_INFINITY);
}

/**
 * Throws ProtocolError('invalid_request') when a tokenized prompt is too long.
 * - mindie: tokens must be ≤ min(maxInputTokenLen, maxSeqLen − 1, max_position_embeddings, 1M);
 *   the message names the limit that binds.
 * - openai: vLLM's check: the prompt alone must be shorter than the context length.
 * An empty prompt (no tokens at all, e.g. "" without BOS) is refused by both.
 */
export function checkPromptTokenLimit(
  tokenCount: number,
  limits: PromptLimits,
  api: 'mindie' | 'openai',
  promptParam: string = api === 'mindie' ? 'prompt' : 'messages',
  /** Tokenizing stopped early (past promptTokenCeiling): the prompt has at least tokenCount tokens. */
  countIsLowerBound = false,
): void {
  const count = countIsLowerBound ? `at least ${tokenCount}` : `${tokenCount}`;
  if (tokenCount <= 0) throw invalidRequest('The prompt is empty: it has no tokens after tokenization.', promptParam);
  if (api === 'mindie') {
    const candidates: [number, string][] = [
      [limits.maxInputTokenLen, `maxInputTokenLen is ${limits.maxInputTokenLen}`],
      ...(limits.maxSeqLen !== undefined ? [[limits.maxSeqLen - 1, `maxSeqLen - 1 is ${limits.maxSeqLen - 1}`] as [number, string]] : []),
      [limits.maxModelLen, `the model's max_position_embeddings is ${limits.maxModelLen}`],
      [MINDIE_PROMPT_TOKEN_CAP, `the prompt cap is ${MINDIE_PROMPT_TOKEN_CAP}`],
    ];
    const [limit, reason] = candidates.reduce((a, b) => (b[0] < a[0] ? b : a));
    if (tokenCount > limit) {
      throw invalidRequest(
        `The prompt has ${count} tokens after tokenization, more than the limit of ${limit} (${reason}).`,
        promptParam,
      );
    }
    return;
  }
  const maxModelLen = servedMaxModelLen(limits);
  if (tokenCount >= maxModelLen) {
    throw invalidRequest(
      `This model's maximum context length is ${maxModelLen} tokens. However, you requested ${count} tokens in the messages, Please reduce the length of the messages.`,
      promptParam,
    );
  }
}

/** The most tokens a prompt may have on `api`: tokenizing can stop once past it. */
export function promptTokenCeiling(limits: PromptLimits, api: 'mindie' | 'openai'): number {
  if (api === 'openai') return servedMaxModelLen(limits) - 1;
  return Math.min(limits.maxInputTokenLen, (limits.maxSeqLen ?? Number.POSITIVE_INFINITY) - 1, limits.maxModelLen, MINDIE_PROMPT_TOKEN_CAP);
}

/**
 * The most tokens this server tokenizes for a text no context check stops: /tokenize counts
 * up to this (a longer text is refused, its tokenizing stopped past it), and a piece that
 * truncate_prompt_tokens would have tokenized whole may have this many. The served context
 * length: what one request may buy is what could fit, not what its body holds (4 MB of
 * prose took ~2 s of CPU to count, measured on the embedded and a 32 K vocabulary).
 */
export function tokenizeCeiling(limits: PromptLimits): number {
  return servedMaxModelLen(limits);
}

/**
 * Refuses a text with more than tokenizeCeiling tokens: `counted` when tokenizing stopped
 * past it, else judged from its length alone (vLLM sets no such bound).
 */
export function refuseOverTokenizeCeiling(atLeast: number, limits: PromptLimits, param: string, counted = false): never {
  const how = counted ? 'tokenizing stopped there' : 'judged from its length and words, before tokenizing';
  throw invalidRequest(
    `The text has at least ${atLeast} tokens (${how}), more than the ${tokenizeCeiling(limits)} tokens ` +
      "of this model's context length, the most this server tokenizes for /tokenize or for a piece of a truncate_prompt_tokens prompt. Send less text.",
    param,
  );
}

/**
 * Refuses a text with a piece longer than maxInlinePieceChars where the tokenizer must take
 * it in one call on the request thread (no tokenizer thread: workerd, the page).
 */
export function refuseLongInlinePiece(pieceChars: number, maxChars: number, param: string): never {
  throw invalidRequest(
    `The text has a run of up to ${pieceChars} characters with no place to cut it (no space: CJK, one long word), which the tokenizer ` +
      `takes in one call; this runtime tokenizes on its request thread and takes at most ${maxChars} (maxInlinePieceChars). Break the run up, or send less text.`,
    param,
  );
}

/** vLLM: prompt token ids must be in the vocabulary. */
export function checkPromptTokenIds(tokenIds: readonly number[], vocabSize: number, param = 'prompt'): void {
  let max = -1;
  for (const id of tokenIds) if (id > max) max = id;
  if (max >= vocabSize) throw invalidRequest(`Token id ${max} is out of vocabulary`, param);
}

/** vLLM's truncate_prompt_tokens: keep the last k prompt tokens. */
export function truncatePromptTokens(tokenIds: readonly number[], keepLast: number | undefined): number[] {
  if (keepLast === undefined || tokenIds.length <= keepLast) return [...tokenIds];
  return tokenIds.slice(tokenIds.length - keepLast);
}
