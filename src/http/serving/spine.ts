/**
 * The one path every generating endpoint takes, as vLLM's OpenAIServing base serves its
 * endpoints: read the body, validate it against the endpoint's schema, resolve the model or
 * adapter, check the server's bounds and refuse what it cannot serve (all cheap, before any
 * prompt work); then the endpoint's own work (guided decoding, media, the prompt, sampling
 * parameters); then the checks that need the resolved parameters, the run on the engine, and
 * the endpoint's response. An endpoint is a set of hooks; the order of the checks is here
 * alone, so every endpoint refuses the same way at the same point.
 */
import type { Context } from 'hono';
import type { z } from 'zod';
import type { GenerateRequest } from '../../engine/types.js';
import type { BoundedRequest } from '../../protocol/bound-checks.js';
import { refuseUnsupported, unsupportedByEngine, type UnsupportedFeature } from '../../protocol/unsupported.js';
import { parseRequest } from '../../protocol/validate.js';
import type { SamplingParams } from '../../sampling/params.js';
import { GenerationRun, MergedRuns } from '../generation.js';
import { warnIgnoredFields } from '../ignored-fields.js';
import type { RequestRecord } from '../observability/activity.js';
import { readJsonBody } from '../request-body.js';
import { checkModel } from './models.js';
import { checkBounds, checkLogprobs, type ServingContext } from './context.js';

/** One prompt ready for the engine. */
export interface PreparedPrompt {
  promptTokenIds: number[];
  params: SamplingParams;
  /** Media features the prompt's placeholders stand for. */
  placeholders?: GenerateRequest['placeholders'];
}

/** What an endpoint's own work made of a request: its prompts (one run each) and whatever its response needs. */
export interface PreparedRequest {
  prompts: PreparedPrompt[];
  /** Choices per prompt when there are several prompts (completions' list of prompts, merged into one response). */
  choicesPerPrompt?: number;
}

/** One request on its way through the spine: what every hook may read. */
export interface ServingCall {
  ctx: ServingContext;
  c: Context;
  /** The body as sent (parsed JSON), for fields the schema does not list. */
  body: unknown;
  /** The client's signal: fires when it disconnects. */
  signal: AbortSignal;
  record: RequestRecord | undefined;
  /** The LoRA adapter the request named; undefined for the base model. */
  adapter: string | undefined;
}

export interface GeneratingEndpoint<Schema extends z.ZodObject, Prepared extends PreparedRequest> {
  schema: Schema;
  /** Warn (log) about body fields the schema does not know, as vLLM does; MindIE's API does not. */
  warnIgnoredFields: boolean;
  /** The model or LoRA adapter the request names. */
  model(request: z.output<Schema>): string | null | undefined;
  /** What the request bounds check: the parsed request, or more than it (fields read from the body). */
  bounded?(request: z.output<Schema>, body: unknown): BoundedRequest;
  /** Features this endpoint refuses for this request, before any prompt work. */
  unsupported(request: z.output<Schema>): UnsupportedFeature[];
  /** The endpoint's own work: guided decoding, media, the prompt's tokens, sampling parameters. */
  prepare(request: z.output<Schema>, call: ServingCall): Promise<Prepared>;
  /**
   * Expensive work that waits for the checks needing resolved parameters: running media
   * encoders, whose features it sets as the prompts' placeholders.
   */
  encodeMedia?(prepared: Prepared, call: ServingCall): Promise<void>;
  /** The parameter named when the request's logprobs pass maxLogprobEntries; null: not bounded here. */
  logprobParam(request: z.output<Schema>): string | null;
  /** The response: a stream or one body. */
  respond(run: GenerationRun | MergedRuns, prepared: Prepared, request: z.output<Schema>, call: ServingCall): Response | Promise<Response>;
}

/** A Hono handler serving `endpoint` through the spine. */
export function serveGenerating<Schema extends z.ZodObject, Prepared extends PreparedRequest>(
  ctx: ServingContext,
  endpoint: GeneratingEndpoint<Schema, Prepared>,
): (c: Context) => Promise<Response> {
  const { engine } = ctx;
  return async (c) => {
    const body = await readJsonBody(c.req.raw);
    const request = parseRequest(endpoint.schema, body);
    if (endpoint.warnIgnoredFields) warnIgnoredFields(endpoint.schema, body);
    const adapter = checkModel(endpoint.model(request), engine.info, engine.adapters);
    checkBounds(ctx, endpoint.bounded?.(request, body) ?? (request as BoundedRequest));
    refuseUnsupported(endpoint.unsupported(request));

    const call: ServingCall = { ctx, c, body, signal: c.req.raw.signal, record: c.get('requestRecord'), adapter };
    const prepared = await endpoint.prepare(request, call);

    const first = prepared.prompts[0]!;
    refuseUnsupported(unsupportedByEngine(first.params, engine.features));
    const logprobParam = endpoint.logprobParam(request);
    if (logprobParam !== null) {
      checkLogprobs(
        ctx,
        prepared.prompts.map((prompt) => ({ ...prompt.params, promptTokenCount: prompt.promptTokenIds.length })),
        logprobParam,
      );
    }
    await endpoint.encodeMedia?.(prepared, call);

    const run =
      prepared.prompts.length === 1
        ? await GenerationRun.start(engine, first.promptTokenIds, first.params, call.signal, call.record, { placeholders: first.placeholders, adapter })
        : await MergedRuns.start(engine, prepared.prompts, prepared.choicesPerPrompt ?? 1, call.signal, call.record, { adapter });
    return endpoint.respond(run, prepared, request, call);
  };
}
