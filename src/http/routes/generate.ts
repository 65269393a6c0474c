import { Hono } from 'hono';
import { MindieGenerateRequestSchema, mindiePromptText } from '../../protocol/mindie.js';
import { checkPromptTokenLimit, promptTokenCeiling } from '../../protocol/prompt-limits.js';
import { mindieToSamplingParams } from '../../protocol/sampling-params.js';
import { unsupportedMindieFeatures } from '../../protocol/unsupported.js';
import { encodePrompt } from '../prompt-tokens.js';
import { requestGuide, type RequestGuidedFields } from '../guided-decoding.js';
import { requestClient } from '../client-identity.js';
import { jsonResponse } from '../json-body.js';
import { inlinePieceBound, type ServingContext } from '../serving/context.js';
import { generateNonStreaming, generateStream } from '../serving/generate.js';
import { loadGenerateMedia } from '../serving/media.js';
import {
  audioModel,
  encodePromptMedia,
  expandAudioPrompt,
  expandMultimodalPrompt,
  multimodalModel,
  multimodalPromptText,
  processAudioParts,
  processMultimodalImages,
} from '../serving/multimodal.js';
import { serveGenerating, type GeneratingEndpoint, type PreparedPrompt } from '../serving/spine.js';
import { sseResponse } from '../sse.js';

interface PreparedGenerate {
  prompts: [PreparedPrompt];
  promptText: string;
  media: { images: Parameters<typeof encodePromptMedia>[1]; audio: Parameters<typeof encodePromptMedia>[2] };
}

/**
 * An extension to MindIE's API: the OpenAI endpoints' structured-output fields (guided_json,
 * guided_regex, guided_choice, response_format), read from the body as sent since the MindIE
 * schema does not list them (parsing succeeded: it is an object).
 */
function guidedFields(body: unknown): RequestGuidedFields {
  const { guided_json, guided_regex, guided_choice, guided_grammar, response_format } = body as RequestGuidedFields;
  return { guided_json, guided_regex, guided_choice, guided_grammar, response_format };
}

/** POST /generate: MindIE's text / streaming inference API (vLLM 0.6.4 legacy format). */
export function generateRoutes(ctx: ServingContext): Hono {
  const { engine, limits } = ctx;

  const endpoint: GeneratingEndpoint<typeof MindieGenerateRequestSchema, PreparedGenerate> = {
    schema: MindieGenerateRequestSchema,
    warnIgnoredFields: false,
    // `model` is the LoRA id: an adapter's name, or none ("None", null, absent) for the base model.
    model: (request) => request.model,
    bounded: (request, body) => ({ ...request, ...guidedFields(body) }),
    unsupported: unsupportedMindieFeatures,
    // MindIE's API returns no logprobs beyond its details: nothing to bound here.
    logprobParam: () => null,

    async prepare(request, call) {
      const guide = await requestGuide(ctx.guideCompiler, call.body as RequestGuidedFields, limits.guided, requestClient(call.c));
      // Media parts are fetched and decoded before the model may refuse them (text-only today).
      const media = await loadGenerateMedia(ctx, request.prompt, call.signal, requestClient(call.c));

      // A vision-language model reads image parts where they stand, as its placeholder,
      // expanded to the image's tokens before the context check.
      // An audio-language model reads audio parts the same way, as its audio placeholder.
      const multimodal = multimodalModel(engine);
      const audio = audioModel(engine);
      const promptText =
        (multimodal !== null || audio !== null) && typeof request.prompt !== 'string'
          ? multimodalPromptText(request.prompt, multimodal?.processor.placeholder ?? '', multimodal?.processor.videoPlaceholder, audio?.processor.placeholder)
          : mindiePromptText(request.prompt);
      call.record?.notePrompt(promptText);
      const visuals = multimodal !== null ? await processMultimodalImages(ctx, multimodal, media, 'prompt', call.signal, requestClient(call.c)) : null;
      const expanded = multimodal !== null && visuals !== null ? expandMultimodalPrompt(multimodal, promptText, visuals, 'prompt') : null;
      const processedAudio = audio !== null ? await processAudioParts(ctx, audio, media, 'prompt', call.signal, requestClient(call.c)) : null;
      const heard = audio !== null && processedAudio !== null ? expandAudioPrompt(audio, expanded?.text ?? promptText, processedAudio, 'prompt') : null;
      const ceiling = promptTokenCeiling(limits.prompt, 'mindie');
      const promptTokenIds = await encodePrompt(engine.tokenizer, heard?.text ?? expanded?.text ?? promptText, {
        addSpecialTokens: true,
        stopAfter: ceiling,
        signal: call.signal,
        client: requestClient(call.c),
        inlinePieces: inlinePieceBound(ctx, 'prompt'),
        refuseAtLeast: (atLeast) => checkPromptTokenLimit(atLeast, limits.prompt, 'mindie', 'prompt', true),
      });
      checkPromptTokenLimit(promptTokenIds.length, limits.prompt, 'mindie', 'prompt', promptTokenIds.length > ceiling);
      const params = { ...mindieToSamplingParams(request, limits.sampling, promptTokenIds.length), guide };
      return { prompts: [{ promptTokenIds, params }], promptText, media: { images: expanded?.images ?? [], audio: heard?.audio ?? [] } };
    },

    async encodeMedia(prepared) {
      prepared.prompts[0].placeholders = await encodePromptMedia(engine, prepared.media.images, prepared.media.audio);
    },

    respond(run, prepared, request) {
      if (request.stream) {
        return sseResponse(generateStream(run, { fullText: ctx.config.fullTextEnabled, n: prepared.prompts[0].params.n }), run);
      }
      return generateNonStreaming(run, prepared.promptText).then(jsonResponse);
    },
  };

  const routes = new Hono();
  routes.post('/generate', serveGenerating(ctx, endpoint));
  return routes;
}
