/**
 * Logprobs in the response shapes of vLLM 0.6's OpenAI server: the completions
 * `logprobs` object, the chat `logprobs.content` list and the `prompt_logprobs` list.
 *
 * Values are what the engine reports: for generated tokens the log-softmax of the
 * distribution the token was sampled from (after penalties, temperature, top-k/top-p/
 * min-p; for greedy and beam search after the penalties only), for prompt tokens the
 * raw model distribution.
 */
import type { PromptTokenLogprob, TokenLogprob } from '../sampling/logprobs.js';
import type { Tokenizer } from '../tokenizer/types.js';
import { TokenTexts } from './token-texts.js';

/** JSON has no -Infinity: OpenAI and vLLM report impossible tokens at -9999. */
export const MIN_REPORTED_LOGPROB = -9999;

const reported = (logprob: number) => Math.max(logprob, MIN_REPORTED_LOGPROB);

export interface ReportedToken {
  tokenId: number;
  /** The token's text in context (see TokenTexts). */
  text: string;
  logprob: number;
  /** 1-based rank in the distribution, when known (prompt logprobs). */
  rank?: number;
}

/** One position of a report: the token there and its alternatives, best first. */
export interface PositionReport {
  tokenId: number;
  text: string;
  /** null for the first prompt token: nothing predicts it. */
  logprob: number | null;
  rank?: number;
  top: ReportedToken[] | null;
}

/** What naming tokens takes: the tokenizer, the prompt, and the request's skip_special_tokens. */
export interface TokenNaming {
  tokenizer: Pick<Tokenizer, 'decode'>;
  promptTokenIds: readonly number[];
  skipSpecialTokens: boolean;
  /** vLLM's return_tokens_as_token_ids: generated tokens and their alternatives named "token_id:<id>". */
  asTokenIds?: boolean;
}

/** Names one sequence's generated tokens and their alternatives, delta by delta. */
export class GeneratedTokenReporter {
  private readonly texts: TokenTexts;
  private readonly asTokenIds: boolean;

  constructor(naming: TokenNaming) {
    this.texts = new TokenTexts(naming.tokenizer, naming.promptTokenIds, naming.skipSpecialTokens);
    this.asTokenIds = naming.asTokenIds ?? false;
  }

  report(tokenIds: readonly number[], logprobs: readonly number[], topLogprobs?: readonly TokenLogprob[][]): PositionReport[] {
    if (this.asTokenIds) {
      const name = (tokenId: number) => `token_id:${tokenId}`;
      return tokenIds.map((tokenId, i) => ({
        tokenId,
        text: name(tokenId),
        logprob: logprobs[i] ?? null,
        top: topLogprobs?.[i]?.map((t) => ({ ...t, text: name(t.tokenId) })) ?? null,
      }));
    }
    return tokenIds.map((tokenId, i) => {
      // Alternatives are named before the chosen token moves the context on.
      const top = topLogprobs?.[i]?.map((t) => ({ ...t, text: this.texts.alternative(t.tokenId) })) ?? null;
      return { tokenId, text: this.texts.push(tokenId), logprob: logprobs[i] ?? null, top };
    });
  }
}

/**
 * The prompt's positions: the first token alone (vLLM decodes it by itself, special
 * tokens included) with no logprob, then every other token in context with its logprob,
 * rank and alternatives. `report` takes the positions in order, a range at a time (a long
 * prompt's alternatives are thousands of decodes: the caller may yield between ranges).
 */
export class PromptPositionReporter {
  private readonly texts: TokenTexts;
  private next = 0;

  constructor(
    private readonly naming: TokenNaming,
    private readonly promptLogprobs: ReadonlyArray<PromptTokenLogprob | null>,
  ) {
    this.texts = new TokenTexts(naming.tokenizer, [], naming.skipSpecialTokens);
  }

  get length(): number {
    return this.naming.promptTokenIds.length;
  }

  /** The next `count` positions (fewer at the end). */
  report(count: number): PositionReport[] {
    const { tokenizer, promptTokenIds } = this.naming;
    const end = Math.min(this.next + count, promptTokenIds.length);
    const out: PositionReport[] = [];
    for (let position = this.next; position < end; position++) {
      const tokenId = promptTokenIds[position];
      const entry = this.promptLogprobs[position] ?? null;
      if (position === 0 || entry === null) {
        this.texts.push(tokenId);
        out.push({ tokenId, text: tokenizer.decode([tokenId], { skipSpecialTokens: false }), logprob: null, top: null });
        continue;
      }
      const top = entry.top.map((t, i) => ({ ...t, text: this.texts.alternative(t.tokenId), rank: i + 1 }));
      out.push({ tokenId, text: this.texts.push(tokenId), logprob: entry.logprob, rank: entry.rank, top });
    }
    this.next = end;
    return out;
  }
}

/** Every prompt position at once (see PromptPositionReporter). */
export function promptPositionReports(naming: TokenNaming, promptLogprobs: ReadonlyArray<PromptTokenLogprob | null>): PositionReport[] {
  const reporter = new PromptPositionReporter(naming, promptLogprobs);
  return reporter.report(reporter.length);
}

/** vLLM's CompletionLogProbs. */
export interface CompletionLogprobs {
  text_offset: number[];
  token_logprobs: Array<number | null>;
  tokens: string[];
  top_logprobs: Array<Record<string, number> | null>;
}

/**
 * The completions `logprobs` object for consecutive positions. `topCount` is the request's
 * `logprobs`: each position's dict holds the chosen token and the best topCount
 * alternatives, so topCount + 1 entries when the chosen one is not among them (OpenAI: "the API will always return the logprob of the
 * sampled token"). Text offsets count characters from `initialOffset`.
 */
export function completionLogprobs(reports: readonly PositionReport[], topCount: number, initialOffset: number): CompletionLogprobs {
  const out: CompletionLogprobs = { text_offset: [], token_logprobs: [], tokens: [], top_logprobs: [] };
  let offset = initialOffset;
  for (const position of reports) {
    out.tokens.push(position.text);
    out.text_offset.push(offset);
    offset += position.text.length;
    if (position.logprob === null) {
      out.token_logprobs.push(null);
      out.top_logprobs.push(null);
      continue;
    }
    out.token_logprobs.push(reported(position.logprob));
    const best = (position.top ?? []).slice(0, topCount).filter((t) => t.tokenId !== position.tokenId);
    const dict: Record<string, number> = {};
    // Tokens with the same text share a key, as in vLLM; the first (the chosen one) keeps its place.
    for (const entry of [position, ...best]) if (!(entry.text in dict)) dict[entry.text] = reported(entry.logprob!);
    out.top_logprobs.push(dict);
  }
  return out;
}

/** One entry of the chat `logprobs.content` list (and of its `top_logprobs`). */
export interface ChatLogprob {
  token: string;
  logprob: number;
  bytes: number[] | null;
}

export interface ChatLogprobContent extends ChatLogprob {
  top_logprobs: ChatLogprob[];
}

const utf8 = new TextEncoder();

/**
 * The chat `logprobs.content` entries for consecutive generated positions. `top_logprobs`
 * lists the best alternatives, best first (OpenAI's definition; vLLM 0.6 puts the chosen
 * token first even when it was not among them).
 */
export function chatLogprobContent(reports: readonly PositionReport[]): ChatLogprobContent[] {
  return reports.map((position) => ({
    token: position.text,
    logprob: reported(position.logprob ?? 0),
    bytes: Array.from(utf8.encode(position.text)),
    top_logprobs: (position.top ?? []).map((t) => ({ token: t.text, logprob: reported(t.logprob), bytes: Array.from(utf8.encode(t.text)) })),
  }));
}

/** vLLM's Logprob as it serialises in `prompt_logprobs`. */
export interface VllmLogprob {
  logprob: number;
  rank: number | null;
  decoded_token: string;
}

/**
 * vLLM's `prompt_logprobs` field: per prompt position, null for the first, else a dict
 * keyed by token id holding the prompt token and its top alternatives.
 */
export function vllmPromptLogprobs(reports: readonly PositionReport[]): Array<Record<string, VllmLogprob> | null> {
  return reports.map((position) => {
    if (position.logprob === null) return null;
    const dict: Record<string, VllmLogprob> = {
      [position.tokenId]: { logprob: reported(position.logprob), rank: position.rank ?? null, decoded_token: position.text },
    };
    for (const t of position.top ?? []) {
      dict[t.tokenId] ??= { logprob: reported(t.logprob), rank: t.rank ?? null, decoded_token: t.text };
    }
    return dict;
  });
}
