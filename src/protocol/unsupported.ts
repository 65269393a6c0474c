/**
 * Features the request schemas accept (so clients get vLLM's validation) but this server
 * does not implement yet: multiple sequences, beam search, logprobs, tool calling. The
 * serving layer lists them and refuses the request with a clear 400
 * instead of silently ignoring a parameter. Each entry names the parameter, so a route
 * that implements one of them can drop it from the list. (Media parts are not listed:
 * the serving layer fetches and decodes them, then refuses what the model cannot take.
 * Nor is structured output: src/http/guided-decoding.ts compiles it, and refuses the
 * constraints it cannot serve by name.)
 */
import { invalidRequest } from './errors.js';
import type { MindieGenerateRequest } from './mindie.js';
import type { OpenAISamplingFields } from './openai-common.js';
import type { CompletionRequest } from './openai-completions.js';
import { effectiveToolChoice, type ChatCompletionRequest } from './openai-chat.js';

export interface UnsupportedFeature {
  /** The request parameter that asks for it (dotted path). */
  param: string;
  message: string;
}

function multipleSequences(n: number | undefined, bestOf: number | undefined): UnsupportedFeature[] {
  const out: UnsupportedFeature[] = [];
  if ((n ?? 1) > 1) out.push({ param: 'n', message: `n > 1 is not supported yet: this server returns one sequence per prompt (got n=${n}).` });
  if ((bestOf ?? 1) > 1) {
    out.push({ param: 'best_of', message: `best_of > 1 is not supported yet: this server generates one sequence per prompt (got best_of=${bestOf}).` });
  }
  return out;
}

function commonOpenAI(req: OpenAISamplingFields): UnsupportedFeature[] {
  const out = multipleSequences(req.n, req.best_of);
  if (req.use_beam_search) out.push({ param: 'use_beam_search', message: 'Beam search (use_beam_search) is not supported yet.' });
  if (req.logit_bias !== undefined && req.logit_bias.size > 0) {
    out.push({ param: 'logit_bias', message: 'logit_bias is not supported yet.' });
  }
  if (req.prompt_logprobs !== undefined) {
    out.push({ param: 'prompt_logprobs', message: 'prompt_logprobs is not supported yet.' });
  }
  if (req.priority !== 0) {
    out.push({ param: 'priority', message: `Got priority ${req.priority} but priority scheduling is not enabled.` });
  }
  return out;
}

export function unsupportedCompletionFeatures(req: CompletionRequest): UnsupportedFeature[] {
  const out = commonOpenAI(req);
  if (req.logprobs !== undefined) out.push({ param: 'logprobs', message: 'logprobs is not supported yet.' });
  if (req.echo) out.push({ param: 'echo', message: 'echo is not supported yet.' });
  if (req.suffix !== undefined) out.push({ param: 'suffix', message: 'suffix is not currently supported' });
  if (req.allowed_token_ids !== undefined) {
    out.push({ param: 'allowed_token_ids', message: 'allowed_token_ids is not supported yet.' });
  }
  if (Array.isArray(req.prompt) && req.prompt.length > 1 && typeof req.prompt[0] !== 'number') {
    out.push({ param: 'prompt', message: 'A list of several prompts is not supported yet: send one prompt per request.' });
  }
  return out;
}

export function unsupportedChatFeatures(req: ChatCompletionRequest): UnsupportedFeature[] {
  const out = commonOpenAI(req);
  if (req.logprobs) out.push({ param: 'logprobs', message: 'logprobs is not supported yet.' });
  if (req.echo) out.push({ param: 'echo', message: 'echo is not supported yet.' });
  // With no tool-call parser (vLLM without --enable-auto-tool-choice), "auto" is refused
  // and a named tool needs guided decoding; "none" just hands the tools to the template.
  const toolChoice = effectiveToolChoice(req);
  if (toolChoice === 'auto') {
    out.push({
      param: 'tool_choice',
      message: 'Tool calling is not supported: "auto" tool choice needs a tool-call parser, which this server does not have. Send tool_choice "none" to pass the tools to the chat template only.',
    });
  } else if (typeof toolChoice === 'object') {
    out.push({ param: 'tool_choice', message: 'A named tool_choice needs structured output, which is not supported yet.' });
  }
  return out;
}

export function unsupportedMindieFeatures(req: MindieGenerateRequest): UnsupportedFeature[] {
  return multipleSequences(req.n, req.best_of);
}

/** Throws the first feature as ProtocolError('invalid_request'). */
export function refuseUnsupported(features: readonly UnsupportedFeature[]): void {
  const first = features[0];
  if (first !== undefined) throw invalidRequest(first.message, first.param);
}
