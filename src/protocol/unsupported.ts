/**
 * Features the request schemas accept (so clients get vLLM's validation) but this server
 * does not implement yet: priority, suffix, allowed_token_ids. The serving layer lists them and refuses
 * the request with a clear 400 instead of silently ignoring a parameter. Each entry names the parameter, so a route
 * that implements one of them can drop it from the list. (Media parts are not listed:
 * the serving layer fetches and decodes them, then refuses what the model cannot take.
 * Nor is structured output: src/http/guided-decoding.ts compiles it, and refuses the
 * constraints it cannot serve by name.)
 */
import type { EngineFeatures } from '../engine/types.js';
import type { SamplingParams } from '../sampling/params.js';
import { invalidRequest } from '../common/protocol-error.js';
import type { MindieGenerateRequest } from './mindie.js';
import type { OpenAISamplingFields } from './openai-common.js';
import type { CompletionRequest } from './openai-completions.js';
import type { ChatCompletionRequest } from './openai-chat.js';

export interface UnsupportedFeature {
  /** The request parameter that asks for it (dotted path). */
  param: string;
  message: string;
}

function commonOpenAI(req: OpenAISamplingFields): UnsupportedFeature[] {
  const out: UnsupportedFeature[] = [];
  if (req.priority !== 0) {
    out.push({ param: 'priority', message: `Got priority ${req.priority} but priority scheduling is not enabled.` });
  }
  return out;
}

export function unsupportedCompletionFeatures(req: CompletionRequest): UnsupportedFeature[] {
  const out = commonOpenAI(req);
  if (req.suffix !== undefined) out.push({ param: 'suffix', message: 'suffix is not currently supported' });
  if (req.allowed_token_ids !== undefined) {
    out.push({ param: 'allowed_token_ids', message: 'allowed_token_ids is not supported yet.' });
  }
  return out;
}

export function unsupportedChatFeatures(req: ChatCompletionRequest): UnsupportedFeature[] {
  const out = commonOpenAI(req);
  return out;
}

/** Nothing today: n and best_of are served. Kept so the route checks MindIE requests like the others. */
export function unsupportedMindieFeatures(_req: MindieGenerateRequest): UnsupportedFeature[] {
  return [];
}

/**
 * What the resolved parameters ask of the engine that it does not declare (see
 * EngineFeatures), named by the request parameter.
 */
export function unsupportedByEngine(params: SamplingParams, features: EngineFeatures | undefined): UnsupportedFeature[] {
  const out: UnsupportedFeature[] = [];
  const refuse = (param: string, what: string) =>
    out.push({ param, message: `${what} is not supported by this server's engine (it serves one sampled sequence per request).` });
  if (params.useBeamSearch && !features?.beamSearch) refuse('use_beam_search', 'Beam search');
  if ((params.n ?? 1) > 1 && !features?.multipleSequences) refuse('n', `n > 1 (got n=${params.n})`);
  if ((params.bestOf ?? 1) > 1 && !features?.multipleSequences) refuse('best_of', `best_of > 1 (got best_of=${params.bestOf})`);
  if (params.logprobs !== undefined && !features?.logprobs) refuse('logprobs', 'logprobs');
  if (params.promptLogprobs !== undefined && !features?.logprobs) refuse('prompt_logprobs', 'prompt_logprobs');
  out.push(...(features?.refusals?.(params) ?? []));
  return out;
}

/** Throws the first feature as ProtocolError('invalid_request'). */
export function refuseUnsupported(features: readonly UnsupportedFeature[]): void {
  const first = features[0];
  if (first !== undefined) throw invalidRequest(first.message, first.param);
}
