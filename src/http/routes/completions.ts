import { Hono } from 'hono';
import { CompletionRequestSchema, completionPrompts } from '../../protocol/openai-completions.js';
import { checkPromptTokenIds, checkPromptTokenLimit, truncatePromptTokens } from '../../protocol/prompt-limits.js';
import { completionToSamplingParams } from '../../protocol/sampling-params.js';
import { refuseUnsupported, unsupportedCompletionFeatures, unsupportedByEngine } from '../../protocol/unsupported.js';
import { parseRequest } from '../../protocol/validate.js';
import { GenerationRun } from '../generation.js';
import { requestGuide } from '../guided-decoding.js';
import { responseId } from '../ids.js';
import { readJsonBody } from '../request-body.js';
import { promptLimits, samplingContext, type ServingContext } from '../serving-context.js';
import { completeNonStreaming, completionStream, type CompletionJob } from '../serving-completion.js';
import { checkModel } from '../serving-models.js';
import { sseResponse } from '../sse.js';
import { streamUsageOptions } from '../usage.js';

/** POST /v1/completions: OpenAI's (legacy) completions API as vLLM serves it. */
export function completionsRoutes(ctx: ServingContext): Hono {
  const routes = new Hono();
  const { engine } = ctx;

  routes.post('/v1/completions', async (c) => {
    const request = parseRequest(CompletionRequestSchema, await readJsonBody(c.req.raw));
    const adapter = checkModel(request.model, engine.info, engine.adapters);
    refuseUnsupported(unsupportedCompletionFeatures(request));
    // Structured output is compiled with the rest of validation: a constraint the server
    // cannot serve is refused before any prompt work.
    const guide = await requestGuide(ctx.guideCompiler, request);

    // unsupportedCompletionFeatures leaves exactly one prompt.
    const prompt = completionPrompts(request.prompt)[0]!;
    let promptTokenIds: number[];
    if ('text' in prompt) {
      promptTokenIds = engine.tokenizer.encode(prompt.text, { addSpecialTokens: request.add_special_tokens });
    } else {
      checkPromptTokenIds(prompt.tokenIds, engine.info.vocabSize);
      promptTokenIds = prompt.tokenIds;
    }
    promptTokenIds = truncatePromptTokens(promptTokenIds, request.truncate_prompt_tokens);
    checkPromptTokenLimit(promptTokenIds.length, promptLimits(ctx), 'openai', 'prompt');
    const params = { ...completionToSamplingParams(request, samplingContext(ctx), promptTokenIds.length), guide };
    refuseUnsupported(unsupportedByEngine(params, engine.features));

    const run = await GenerationRun.start(engine, promptTokenIds, params, c.req.raw.signal, adapter);
    const job: CompletionJob = {
      id: responseId('cmpl', c.req.raw),
      model: adapter ?? engine.info.id,
      promptTokenCount: promptTokenIds.length,
      usage: streamUsageOptions(request.stream_options),
      tokens: { tokenizer: engine.tokenizer, promptTokenIds, skipSpecialTokens: params.skipSpecialTokens },
      logprobs: request.logprobs,
      // vLLM echoes a token-id prompt as its decoded text.
      echoText: request.echo
        ? 'text' in prompt
          ? prompt.text
          : engine.tokenizer.decode(promptTokenIds, { skipSpecialTokens: false })
        : undefined,
    };
    if (request.stream) return sseResponse(completionStream(run, job), () => run.abort());
    return c.json(await completeNonStreaming(run, job));
  });

  return routes;
}
