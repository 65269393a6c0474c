import { Hono } from 'hono';
import { CompletionRequestSchema, completionPrompts } from '../../protocol/openai-completions.js';
import { checkPromptTokenIds, checkPromptTokenLimit, promptTokenCeiling, truncatePromptTokens } from '../../protocol/prompt-limits.js';
import { completionToSamplingParams } from '../../protocol/sampling-params.js';
import { unsupportedCompletionFeatures } from '../../protocol/unsupported.js';
import { encodePrompt } from '../prompt-tokens.js';
import { requestGuide } from '../guided-decoding.js';
import { requestClient } from '../client-identity.js';
import { responseId } from '../ids.js';
import { jsonResponse } from '../json-body.js';
import { inlinePieceBound, refuseOverTokenizeBound, type ServingContext } from '../serving/context.js';
import { completeNonStreaming, completionStream, type CompletionJob, type CompletionPrompt } from '../serving/completion.js';
import { serveGenerating, type GeneratingEndpoint } from '../serving/spine.js';
import { sseResponse } from '../sse.js';
import { streamUsageOptions } from '../usage.js';

type CompletionRequest = typeof CompletionRequestSchema;

/** POST /v1/completions: OpenAI's (legacy) completions API as vLLM serves it. */
export function completionsRoutes(ctx: ServingContext): Hono {
  const { engine, limits } = ctx;

  const endpoint: GeneratingEndpoint<CompletionRequest, { prompts: CompletionPrompt[]; choicesPerPrompt: number }> = {
    schema: CompletionRequestSchema,
    warnIgnoredFields: true,
    model: (request) => request.model,
    unsupported: unsupportedCompletionFeatures,
    logprobParam: (request) => (request.prompt_logprobs !== undefined ? 'prompt_logprobs' : 'logprobs'),

    async prepare(request, call) {
      // Structured output is compiled with the rest of validation: a constraint the server
      // cannot serve is refused before any prompt work.
      const guide = await requestGuide(ctx.guideCompiler, request, limits.guided, requestClient(call.c));
      // vLLM runs a list of prompts as one request: one set of n choices per prompt.
      const prompts = completionPrompts(request.prompt);
      // Tokenizing can stop once a prompt (its last truncate_prompt_tokens, when truncating) is surely too long.
      const ceiling = promptTokenCeiling(limits.prompt, 'openai');
      const truncating = request.truncate_prompt_tokens !== undefined;
      const prepared: CompletionPrompt[] = [];
      for (const [promptIndex, prompt] of prompts.entries()) {
        const param = prompts.length === 1 ? 'prompt' : `prompt[${promptIndex}]`;
        let promptTokenIds: number[];
        let stoppedEarly = false;
        if ('text' in prompt) {
          promptTokenIds = await encodePrompt(engine.tokenizer, prompt.text, {
            addSpecialTokens: request.add_special_tokens,
            stopAfter: ceiling,
            signal: call.signal,
            client: requestClient(call.c),
            // Truncating: only the last tokens are tokenized where the text can be cut; a piece
            // tokenized whole is bounded by its length first.
            keepLast: request.truncate_prompt_tokens,
            lengthCeiling: limits.tokenizeCeiling,
            inlinePieces: inlinePieceBound(ctx, param),
            refuseAtLeast: (atLeast) =>
              truncating ? refuseOverTokenizeBound(ctx, atLeast, param) : checkPromptTokenLimit(atLeast, limits.prompt, 'openai', param, true),
          });
          stoppedEarly = promptTokenIds.length > ceiling;
        } else {
          checkPromptTokenIds(prompt.tokenIds, engine.info.vocabSize);
          promptTokenIds = prompt.tokenIds;
        }
        promptTokenIds = truncatePromptTokens(promptTokenIds, request.truncate_prompt_tokens);
        checkPromptTokenLimit(promptTokenIds.length, limits.prompt, 'openai', param, stoppedEarly);
        const params = { ...completionToSamplingParams(request, limits.sampling, promptTokenIds.length), guide };
        call.record?.notePrompt('text' in prompt ? prompt.text : JSON.stringify(prompt.tokenIds));
        const tokens = { tokenizer: engine.tokenizer, promptTokenIds, skipSpecialTokens: params.skipSpecialTokens, asTokenIds: request.return_tokens_as_token_ids };
        // vLLM echoes a token-id prompt as its decoded text.
        const echoText = request.echo
          ? 'text' in prompt
            ? prompt.text
            : engine.tokenizer.decode(promptTokenIds, { skipSpecialTokens: false })
          : undefined;
        prepared.push({ promptTokenIds, params, tokens, echoText });
      }
      return { prompts: prepared, choicesPerPrompt: request.n };
    },

    respond(run, prepared, request, call) {
      const first = prepared.prompts[0]!;
      const job: CompletionJob = {
        id: responseId('cmpl', call.c.req.raw, undefined, call.record?.id),
        model: call.adapter ?? engine.info.id,
        promptTokenCount: prepared.prompts.reduce((sum, prompt) => sum + prompt.promptTokenIds.length, 0),
        usage: streamUsageOptions(request.stream_options, ctx.config.enablePromptTokensDetails),
        tokens: first.tokens,
        logprobs: request.logprobs,
        echoText: first.echoText,
      };
      if (prepared.prompts.length > 1) {
        job.prompts = prepared.prompts;
        job.choicesPerPrompt = prepared.choicesPerPrompt;
      }
      if (request.stream) return sseResponse(completionStream(run, job), run);
      return completeNonStreaming(run, job).then(jsonResponse);
    },
  };

  const routes = new Hono();
  routes.post('/v1/completions', serveGenerating(ctx, endpoint));
  return routes;
}
