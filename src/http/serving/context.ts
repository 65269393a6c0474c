import { requestBoundsOf, type RequestBounds } from '../../config/bound-settings.js';
import type { ServerConfig } from '../../config/server-config.js';
import type { EmbeddingService } from '../../embeddings/types.js';
import type { Engine } from '../../engine/types.js';
import type { MediaFetcher, MediaKind, VideoSampling } from '../../media/index.js';
import { refuseLongInlinePiece, refuseOverTokenizeCeiling, servedMaxModelLen, tokenizeCeiling, type PromptLimits } from '../../protocol/prompt-limits.js';
import { checkBodyListItems } from '../../protocol/list-bounds.js';
import { checkLogprobBudget, checkRequestBounds, type BoundedRequest, type LogprobWork } from '../../protocol/bound-checks.js';
import type { SamplingContext } from '../../protocol/sampling-params.js';
import type { GuidedLimits } from '../../guided/limits.js';
import type { ChatTemplate } from '../../tokenizer/chat-template.js';
import type { TemplateBudget } from '../../tokenizer/template-budget.js';
import type { Context } from 'hono';
import { requestClient } from '../client-identity.js';
import type { TemplateOffLoop, TemplateThread } from '../../tokenizer/template-thread.js';
import type { GuideCompiler } from '../guided-decoding.js';
import type { InlinePieceBound } from '../prompt-tokens.js';

/** What every route needs: the engine, the server's limits, the chat template and media input. */
export interface ServingContext {
  engine: Engine;
  /** The served embedding model (vLLM's "embed" task); null: the engine generates, and /v1/embeddings answers vLLM's 400. */
  embeddings: EmbeddingService | null;
  config: ServerConfig;
  /** null when the model ships none: chat requests are then refused with a 400. */
  chatTemplate: ChatTemplate | null;
  /** Fetches and checks the media parts of a request (image_url, audio_url, ...). */
  mediaFetcher: MediaFetcher;
  /** Media kinds the served model takes; empty for a text-only model. */
  acceptedMedia: readonly MediaKind[];
  /** The served model's video frame sampling (engine info); absent: evenly. */
  videoSampling?: VideoSampling;
  /** Compiles structured-output constraints; null: such requests get a 400. */
  guideCompiler: GuideCompiler | null;
  /** Renders long chat templates off the event loop (Node); null: every rendering runs here, within its budget. */
  templateThread: TemplateThread | null;
  /** The server's limits for this model, resolved once when the app is built (resolveServingLimits). */
  limits: ServingLimits;
}

/**
 * Every limit a request is checked against, from the settings and the loaded model: fixed
 * once the model is loaded, so resolved once, not on each request's path.
 */
export interface ServingLimits {
  prompt: PromptLimits;
  /** The context length the OpenAI endpoints report: the model's, lowered by maxSeqLen. */
  maxModelLen: number;
  bounds: RequestBounds;
  /** What one request's n / beams must fit in: the settings' cap, lowered by the engine's KV budget. */
  maxRunningSequences: number;
  sampling: SamplingContext;
  /** What a structured-output constraint may ask for. */
  guided: GuidedLimits;
  /** How many tokens /tokenize counts, and a piece tokenized whole for truncate_prompt_tokens may have: the served context's. */
  tokenizeCeiling: number;
  /** What one chat template rendering may take: maxChatTemplateSteps, and no text longer than a prompt may be. */
  templateBudget: TemplateBudget;
}

export function resolveServingLimits(engine: Engine, config: ServerConfig): ServingLimits {
  const bounds = requestBoundsOf(config);
  const prompt: PromptLimits = { maxInputTokenLen: config.maxInputTokenLen, maxSeqLen: config.maxSeqLen, maxModelLen: engine.info.maxModelLen };
  const { maxGuidedNestingDepth, maxGuidedProperties, maxGuidedRepetition, maxGrammarChars, maxGrammarWork } = bounds;
  return {
    prompt,
    maxModelLen: servedMaxModelLen(prompt),
    bounds,
    maxRunningSequences: Math.min(config.maxRunningSequences, engine.info.maxRunningSequences ?? Number.POSITIVE_INFINITY),
    sampling: {
      generationDefaults: engine.generationDefaults,
      maxIterTimes: config.maxIterTimes,
      maxModelLen: engine.info.maxModelLen,
      maxSeqLen: config.maxSeqLen,
      eosTokenIds: engine.tokenizer.eosTokenIds,
      vocabSize: engine.info.vocabSize,
      logprobsMode: config.logprobsMode,
    },
    guided: { maxGuidedNestingDepth, maxGuidedProperties, maxGuidedRepetition, maxGrammarChars, maxGrammarWork },
    tokenizeCeiling: tokenizeCeiling(prompt),
    templateBudget: { maxSteps: bounds.maxChatTemplateSteps, maxOutputChars: bounds.maxPromptChars },
  };
}

/**
 * Refuses a request past one of the server's request bounds, before any work on it. It
 * takes the parsed request (values after lax coercion), never the body as sent.
 */
export function checkBounds(ctx: ServingContext, request: BoundedRequest): void {
  checkRequestBounds(request, { bounds: ctx.limits.bounds, maxRunningSequences: ctx.limits.maxRunningSequences });
}

/** Refuses a body with more list and map values (outside its prompt) than maxRequestListItems, before its schema walks them. */
export function checkBodyLists(ctx: ServingContext, body: unknown): void {
  checkBodyListItems(body, ctx.limits.bounds);
}

/** Refuses a request whose logprobs could pass maxLogprobEntries, once its prompts are tokenized and its parameters resolved. */
export function checkLogprobs(ctx: ServingContext, work: readonly LogprobWork[], param: string): void {
  checkLogprobBudget(work, ctx.limits.bounds, param);
}

/** Refuses `param` once tokenizing shows it past the served context (/tokenize, truncate_prompt_tokens). */
export function refuseOverTokenizeBound(ctx: ServingContext, atLeast: number, param: string, counted?: boolean): never {
  return refuseOverTokenizeCeiling(atLeast, ctx.limits.prompt, param, counted);
}

/** /tokenize's bound on what it counts, with the refusals it makes: the served context's. */
export function tokenizeBound(ctx: ServingContext): {
  ceiling: number;
  refuse(atLeast: number, param: string, counted?: boolean): never;
  inlinePieces(param: string): InlinePieceBound;
} {
  return {
    ceiling: ctx.limits.tokenizeCeiling,
    refuse: (atLeast, param, counted) => refuseOverTokenizeBound(ctx, atLeast, param, counted),
    inlinePieces: (param) => inlinePieceBound(ctx, param),
  };
}

/** The longest piece the tokenizer may take in one call on the request thread (where it has no thread of its own), refusing `param` past it. */
export function inlinePieceBound(ctx: ServingContext, param: string): InlinePieceBound {
  const maxChars = ctx.limits.bounds.maxInlinePieceChars;
  return { maxChars, refuse: (pieceChars) => refuseLongInlinePiece(pieceChars, maxChars, param) };
}

/** Where a request's chat template may render when it is long: the template thread, under maxChatTemplateMs; undefined without one. */
export function templateOffLoop(ctx: ServingContext, c: Context): TemplateOffLoop | undefined {
  if (ctx.templateThread === null) return undefined;
  return { thread: ctx.templateThread, timeoutMs: ctx.limits.bounds.maxChatTemplateMs, signal: c.req.raw.signal, client: requestClient(c) };
}
