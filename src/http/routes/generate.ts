import { Hono } from 'hono';
import { MindieGenerateRequestSchema, mindiePromptText } from '../../protocol/mindie.js';
import { checkPromptTokenLimit, promptTokenCeiling } from '../../protocol/prompt-limits.js';
import { mindieToSamplingParams } from '../../protocol/sampling-params.js';
import { refuseUnsupported, unsupportedMindieFeatures, unsupportedByEngine } from '../../protocol/unsupported.js';
import { parseRequest } from '../../protocol/validate.js';
import { GenerationRun } from '../generation.js';
import { encodePrompt } from '../prompt-tokens.js';
import { requestGuide, type RequestGuidedFields } from '../guided-decoding.js';
import { jsonResponse } from '../json-body.js';
import { readJsonBody } from '../request-body.js';
import { checkBodyLists, checkBounds, guidedLimits, inlinePieceBound, promptLimits, samplingContext, type ServingContext } from '../serving-context.js';
import { generateNonStreaming, generateStream } from '../serving-generate.js';
import { loadGenerateMedia } from '../serving-media.js';
import {
  audioModel,
  encodePromptMedia,
  expandAudioPrompt,
  expandMultimodalPrompt,
  multimodalModel,
  multimodalPromptText,
  processAudioParts,
  processMultimodalImages,
} from '../serving-multimodal.js';
import { checkModel } from '../serving-models.js';
import { sseResponse } from '../sse.js';

/** POST /generate: MindIE's text / streaming inference API (vLLM 0.6.4 legacy format). */
export function generateRoutes(ctx: ServingContext): Hono {
  const routes = new Hono();
  const { engine } = ctx;

  routes.post('/generate', async (c) => {
    const body = await readJsonBody(c.req.raw);
    checkBodyLists(ctx, body);
    const request = parseRequest(MindieGenerateRequestSchema, body);
    // `model` is the LoRA id: an adapter's name, or none ("None", null, absent) for the base model.
    const adapter = checkModel(request.model, engine.info, engine.adapters);
    // An extension to MindIE's API: the OpenAI endpoints' structured-output fields
    // (guided_json, guided_regex, guided_choice, response_format), read from the body as
    // sent since the MindIE schema does not list them (parsing succeeded: it is an object).
    const guided = body as RequestGuidedFields;
    const { guided_json, guided_regex, guided_choice, guided_grammar, response_format } = guided;
    checkBounds(ctx, { ...request, guided_json, guided_regex, guided_choice, guided_grammar, response_format });
    refuseUnsupported(unsupportedMindieFeatures(request));
    const guide = await requestGuide(ctx.guideCompiler, guided, guidedLimits(ctx));
    // Media parts are fetched and decoded before the model may refuse them (text-only today).
    const media = await loadGenerateMedia(ctx, request.prompt, c.req.raw.signal);

    // A vision-language model reads image parts where they stand, as its placeholder,
    // expanded to the image's tokens before the context check.
    // An audio-language model reads audio parts the same way, as its audio placeholder.
    const multimodal = multimodalModel(engine);
    const audio = audioModel(engine);
    const promptText =
      (multimodal !== null || audio !== null) && typeof request.prompt !== 'string'
        ? multimodalPromptText(request.prompt, multimodal?.processor.placeholder ?? '', multimodal?.processor.videoPlaceholder, audio?.processor.placeholder)
        : mindiePromptText(request.prompt);
    c.get('requestRecord')?.notePrompt(promptText);
    const visuals = multimodal !== null ? await processMultimodalImages(ctx, multimodal, media, 'prompt', c.req.raw.signal) : null;
    const expanded = multimodal !== null && visuals !== null ? expandMultimodalPrompt(multimodal, promptText, visuals, 'prompt') : null;
    const processedAudio = audio !== null ? await processAudioParts(ctx, audio, media, 'prompt', c.req.raw.signal) : null;
    const heard = audio !== null && processedAudio !== null ? expandAudioPrompt(audio, expanded?.text ?? promptText, processedAudio, 'prompt') : null;
    const ceiling = promptTokenCeiling(promptLimits(ctx), 'mindie');
    const promptTokenIds = await encodePrompt(engine.tokenizer, heard?.text ?? expanded?.text ?? promptText, {
      addSpecialTokens: true,
      stopAfter: ceiling,
      signal: c.req.raw.signal,
      inlinePieces: inlinePieceBound(ctx, 'prompt'),
      refuseAtLeast: (atLeast) => checkPromptTokenLimit(atLeast, promptLimits(ctx), 'mindie', 'prompt', true),
    });
    checkPromptTokenLimit(promptTokenIds.length, promptLimits(ctx), 'mindie', 'prompt', promptTokenIds.length > ceiling);
    const params = { ...mindieToSamplingParams(request, samplingContext(ctx), promptTokenIds.length), guide };
    refuseUnsupported(unsupportedByEngine(params, engine.features));

    const placeholders = await encodePromptMedia(engine, expanded?.images ?? [], heard?.audio ?? []);
    const run = await GenerationRun.start(engine, promptTokenIds, params, c.req.raw.signal, c.get('requestRecord'), { placeholders, adapter });
    if (request.stream) {
      return sseResponse(generateStream(run, { fullText: ctx.config.fullTextEnabled, n: params.n }), () => run.abort());
    }
    return jsonResponse(await generateNonStreaming(run, promptText));
  });

  return routes;
}
