import { Hono } from 'hono';
import { MindieGenerateRequestSchema, mindiePromptText } from '../../protocol/mindie.js';
import { checkPromptTokenLimit, promptTokenCeiling } from '../../protocol/prompt-limits.js';
import { mindieToSamplingParams } from '../../protocol/sampling-params.js';
import { refuseUnsupported, unsupportedMindieFeatures, unsupportedByEngine } from '../../protocol/unsupported.js';
import { parseRequest } from '../../protocol/validate.js';
import { GenerationRun } from '../generation.js';
import { encodePrompt } from '../prompt-tokens.js';
import { requestGuide, type RequestGuidedFields } from '../guided-decoding.js';
import { readJsonBody } from '../request-body.js';
import { checkBounds, guidedLimits, promptLimits, samplingContext, type ServingContext } from '../serving-context.js';
import { generateNonStreaming, generateStream } from '../serving-generate.js';
import { loadGenerateMedia } from '../serving-media.js';
import { checkModel } from '../serving-models.js';
import { sseResponse } from '../sse.js';

/** POST /generate: MindIE's text / streaming inference API (vLLM 0.6.4 legacy format). */
export function generateRoutes(ctx: ServingContext): Hono {
  const routes = new Hono();
  const { engine } = ctx;

  routes.post('/generate', async (c) => {
    const body = await readJsonBody(c.req.raw);
    const request = parseRequest(MindieGenerateRequestSchema, body);
    // `model` names a LoRA adapter; the only weights served are the base model's.
    checkModel(request.model, engine.info);
    checkBounds(ctx, body);
    refuseUnsupported(unsupportedMindieFeatures(request));
    // An extension to MindIE's API: the OpenAI endpoints' structured-output fields
    // (guided_json, guided_regex, guided_choice, response_format), read from the body as
    // sent since the MindIE schema does not list them (parsing succeeded: it is an object).
    const guide = await requestGuide(ctx.guideCompiler, body as RequestGuidedFields, guidedLimits(ctx));
    // Media parts are fetched and decoded before the model may refuse them (text-only today).
    await loadGenerateMedia(ctx, request.prompt, c.req.raw.signal);

    const promptText = mindiePromptText(request.prompt);
    c.get('requestRecord')?.notePrompt(promptText);
    const ceiling = promptTokenCeiling(promptLimits(ctx), 'mindie');
    const promptTokenIds = await encodePrompt(engine.tokenizer, promptText, { addSpecialTokens: true, stopAfter: ceiling });
    checkPromptTokenLimit(promptTokenIds.length, promptLimits(ctx), 'mindie', 'prompt', promptTokenIds.length > ceiling);
    const params = { ...mindieToSamplingParams(request, samplingContext(ctx), promptTokenIds.length), guide };
    refuseUnsupported(unsupportedByEngine(params, engine.features));

    const run = await GenerationRun.start(engine, promptTokenIds, params, c.req.raw.signal, c.get('requestRecord'));
    if (request.stream) {
      return sseResponse(generateStream(run, { fullText: ctx.config.fullTextEnabled, n: params.n }), () => run.abort());
    }
    return c.json(await generateNonStreaming(run, promptText));
  });

  return routes;
}
