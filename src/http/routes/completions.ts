import { Hono } from 'hono';
import { CompletionRequestSchema, completionPrompts } from '../../protocol/openai-completions.js';
import { checkPromptTokenIds, checkPromptTokenLimit, promptTokenCeiling, truncatePromptTokens } from '../../protocol/prompt-limits.js';
import { completionToSamplingParams } from '../../protocol/sampling-params.js';
import { refuseUnsupported, unsupportedCompletionFeatures, unsupportedByEngine } from '../../protocol/unsupported.js';
import { parseRequest } from '../../protocol/validate.js';
import { GenerationRun, MergedRuns } from '../generation.js';
import { encodePrompt } from '../prompt-tokens.js';
import { requestGuide } from '../guided-decoding.js';
import { responseId } from '../ids.js';
import { warnIgnoredFields } from '../ignored-fields.js';
import { jsonResponse } from '../json-body.js';
import { readJsonBody } from '../request-body.js';
import { checkBounds, checkLogprobs, guidedLimits, inlinePieceBound, promptLimits, samplingContext, tokenizeBound, type ServingContext } from '../serving-context.js';
import { completeNonStreaming, completionStream, type CompletionJob } from '../serving-completion.js';
import { checkModel } from '../serving-models.js';
import { sseResponse } from '../sse.js';
import { streamUsageOptions } from '../usage.js';

/** POST /v1/completions: OpenAI's (legacy) completions API as vLLM serves it. */
export function completionsRoutes(ctx: ServingContext): Hono {
  const routes = new Hono();
  const { engine } = ctx;

  routes.post('/v1/completions', async (c) => {
    const body = await readJsonBody(c.req.raw);
    const request = parseRequest(CompletionRequestSchema, body);
    warnIgnoredFields(CompletionRequestSchema, body);
    const adapter = checkModel(request.model, engine.info, engine.adapters);
    checkBounds(ctx, request);
    refuseUnsupported(unsupportedCompletionFeatures(request));
    // Structured output is compiled with the rest of validation: a constraint the server
    // cannot serve is refused before any prompt work.
    const guide = await requestGuide(ctx.guideCompiler, request, guidedLimits(ctx));

    // vLLM runs a list of prompts as one request: one set of n choices per prompt.
    const prompts = completionPrompts(request.prompt);
    // Tokenizing can stop once a prompt (its last truncate_prompt_tokens, when truncating) is surely too long.
    const ceiling = promptTokenCeiling(promptLimits(ctx), 'openai');
    const truncating = request.truncate_prompt_tokens !== undefined;
    const bound = tokenizeBound(ctx);
    const inputs = [];
    for (const [promptIndex, prompt] of prompts.entries()) {
      const param = prompts.length === 1 ? 'prompt' : `prompt[${promptIndex}]`;
      let promptTokenIds: number[];
      let stoppedEarly = false;
      if ('text' in prompt) {
        promptTokenIds = await encodePrompt(engine.tokenizer, prompt.text, {
          addSpecialTokens: request.add_special_tokens,
          stopAfter: ceiling,
          signal: c.req.raw.signal,
          // Truncating: only the last tokens are tokenized where the text can be cut; a piece
          // tokenized whole is bounded by its length first.
          keepLast: request.truncate_prompt_tokens,
          lengthCeiling: bound.ceiling,
          inlinePieces: inlinePieceBound(ctx, param),
          refuseAtLeast: (atLeast) => (truncating ? bound.refuse(atLeast, param) : checkPromptTokenLimit(atLeast, promptLimits(ctx), 'openai', param, true)),
        });
        stoppedEarly = promptTokenIds.length > ceiling;
      } else {
        checkPromptTokenIds(prompt.tokenIds, engine.info.vocabSize);
        promptTokenIds = prompt.tokenIds;
      }
      promptTokenIds = truncatePromptTokens(promptTokenIds, request.truncate_prompt_tokens);
      checkPromptTokenLimit(promptTokenIds.length, promptLimits(ctx), 'openai', param, stoppedEarly);
      const params = { ...completionToSamplingParams(request, samplingContext(ctx), promptTokenIds.length), guide };
      c.get('requestRecord')?.notePrompt('text' in prompt ? prompt.text : JSON.stringify(prompt.tokenIds));
      const tokens = { tokenizer: engine.tokenizer, promptTokenIds, skipSpecialTokens: params.skipSpecialTokens };
      // vLLM echoes a token-id prompt as its decoded text.
      const echoText = request.echo
        ? 'text' in prompt
          ? prompt.text
          : engine.tokenizer.decode(promptTokenIds, { skipSpecialTokens: false })
        : undefined;
      inputs.push({ promptTokenIds, params, tokens, echoText });
    }
    const first = inputs[0]!;
    refuseUnsupported(unsupportedByEngine(first.params, engine.features));
    checkLogprobs(
      ctx,
      inputs.map((input) => ({ ...input.params, promptTokenCount: input.promptTokenIds.length })),
      request.prompt_logprobs !== undefined ? 'prompt_logprobs' : 'logprobs',
    );

    const job: CompletionJob = {
      id: responseId('cmpl', c.req.raw, undefined, c.get('requestRecord')?.id),
      model: adapter ?? engine.info.id,
      promptTokenCount: inputs.reduce((sum, input) => sum + input.promptTokenIds.length, 0),
      usage: streamUsageOptions(request.stream_options, ctx.config.enablePromptTokensDetails),
      tokens: first.tokens,
      logprobs: request.logprobs,
      echoText: first.echoText,
    };
    let run: GenerationRun | MergedRuns;
    if (inputs.length === 1) {
      run = await GenerationRun.start(engine, first.promptTokenIds, first.params, c.req.raw.signal, c.get('requestRecord'), { adapter });
    } else {
      job.prompts = inputs;
      job.choicesPerPrompt = request.n;
      run = await MergedRuns.start(engine, inputs, request.n, c.req.raw.signal, c.get('requestRecord'), { adapter });
    }
    if (request.stream) return sseResponse(completionStream(run, job), () => run.abort());
    return jsonResponse(await completeNonStreaming(run, job));
  });

  return routes;
}
