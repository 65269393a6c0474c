/** Prompt length limits, checked after tokenization. */
import { invalidRequest } from './errors.js';

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
 * Text tokenized with no context check to stop it (/tokenize, a prompt with
 * truncate_prompt_tokens) is still tokenized only up to this: the served context length.
 * Tokenizing runs in pieces the tokenizer cannot cut (a run without spaces, or a whole text
 * for byte-level tokenizers), so the text's size must be bounded before it starts.
 */
export function tokenizeCeiling(limits: PromptLimits): number {
  return servedMaxModelLen(limits);
}

/** Refuses a text whose length alone shows more than tokenizeCeiling tokens (vLLM sets no such bound). */
export function refuseOverTokenizeCeiling(atLeast: number, limits: PromptLimits, param: string): never {
  throw invalidRequest(
    `The text has at least ${atLeast} tokens (judged from its length, before tokenizing), more than the ${tokenizeCeiling(limits)} tokens ` +
      "of this model's context length, the most this server tokenizes for /tokenize or truncate_prompt_tokens. Send less text.",
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
