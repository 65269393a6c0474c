import { Hono } from 'hono';
import { ChatCompletionRequestSchema, messageText } from '../../protocol/openai-chat.js';
import { checkPromptTokenLimit, promptTokenCeiling, truncatePromptTokens } from '../../protocol/prompt-limits.js';
import { chatToSamplingParams } from '../../protocol/sampling-params.js';
import { unsupportedChatFeatures } from '../../protocol/unsupported.js';
import { buildChatPrompt } from '../chat-prompt.js';
import { requestGuide } from '../guided-decoding.js';
import { requestToolCalling, toolCallGuide } from '../serving/tools.js';
import { responseId } from '../ids.js';
import { jsonResponse } from '../json-body.js';
import { chatNonStreaming, chatStream } from '../serving/chat.js';
import { loadChatRequestMedia } from '../serving/media.js';
import { prepareChatMedia } from '../chat-media.js';
import { encodePromptMedia } from '../serving/multimodal.js';
import { inlinePieceBound, refuseOverTokenizeBound, templateOffLoop, type ServingContext } from '../serving/context.js';
import { serveGenerating, type GeneratingEndpoint, type PreparedPrompt } from '../serving/spine.js';
import { sseResponse } from '../sse.js';
import { streamUsageOptions } from '../usage.js';

interface PreparedChat {
  prompts: [PreparedPrompt];
  tools: ReturnType<typeof requestToolCalling>;
  media: Awaited<ReturnType<typeof prepareChatMedia>>;
}

/** POST /v1/chat/completions: messages rendered with the model's chat template, then generated from. */
export function chatRoutes(ctx: ServingContext): Hono {
  const { engine, limits } = ctx;

  const endpoint: GeneratingEndpoint<typeof ChatCompletionRequestSchema, PreparedChat> = {
    schema: ChatCompletionRequestSchema,
    warnIgnoredFields: true,
    model: (request) => request.model,
    unsupported: unsupportedChatFeatures,
    logprobParam: (request) => (request.prompt_logprobs !== undefined ? 'prompt_logprobs' : 'top_logprobs'),

    async prepare(request, call) {
      const tools = requestToolCalling(request, ctx.config.toolCallParser);
      // Structured output is compiled with the rest of validation: a constraint the server
      // cannot serve is refused before any prompt work. Named and "required" tool calls are
      // structured output too.
      const guide =
        tools?.schema !== undefined
          ? await toolCallGuide(ctx.guideCompiler, request, { ...tools, schema: tools.schema }, limits.guided)
          : await requestGuide(ctx.guideCompiler, request, limits.guided);
      // Media parts are fetched and decoded before the model may refuse them (text-only today).
      const media = await loadChatRequestMedia(ctx, request.messages, call.signal);
      const chatMedia = await prepareChatMedia(ctx, media, call.signal);

      // Templates see tools and documents as transformers passes them.
      const templateVariables: Record<string, unknown> = { ...request.chat_template_kwargs };
      if (request.tools !== undefined) templateVariables.tools = request.tools;
      if (request.documents !== undefined) templateVariables.documents = request.documents;
      // Tokenizing can stop once the prompt (its last truncate_prompt_tokens, when truncating) is surely too long.
      const ceiling = promptTokenCeiling(limits.prompt, 'openai');
      const truncating = request.truncate_prompt_tokens !== undefined;
      const prompt = await buildChatPrompt(ctx.chatTemplate, engine.tokenizer, request.messages, {
        addGenerationPrompt: request.add_generation_prompt,
        continueFinalMessage: request.continue_final_message,
        templateVariables,
        addSpecialTokens: request.add_special_tokens,
        templateOverride: request.chat_template,
        templateBudget: limits.templateBudget,
        templateOffLoop: templateOffLoop(ctx, call.signal),
        stopAfter: ceiling,
        // Truncating: only the last tokens are tokenized where the text can be cut; a piece
        // tokenized whole is bounded by its length first.
        keepLast: request.truncate_prompt_tokens,
        lengthCeiling: limits.tokenizeCeiling,
        refuseAtLeast: (atLeast) =>
          truncating ? refuseOverTokenizeBound(ctx, atLeast, 'messages') : checkPromptTokenLimit(atLeast, limits.prompt, 'openai', 'messages', true),
        multimodal: chatMedia.expansion,
        signal: call.signal,
        inlinePieces: inlinePieceBound(ctx, 'messages'),
      });
      call.record?.notePrompt(prompt.text);
      const promptTokenIds = truncatePromptTokens(prompt.tokenIds, request.truncate_prompt_tokens);
      const stoppedEarly = promptTokenIds.length > ceiling;
      checkPromptTokenLimit(promptTokenIds.length, limits.prompt, 'openai', 'messages', stoppedEarly);
      const params = { ...chatToSamplingParams(request, limits.sampling, promptTokenIds.length), guide };
      // A parser's tags are special tokens in the models that write them (vLLM does the same).
      if (tools?.keepSpecialTokens) params.skipSpecialTokens = false;
      return { prompts: [{ promptTokenIds, params }], tools, media: chatMedia };
    },

    async encodeMedia(prepared) {
      prepared.prompts[0].placeholders = await encodePromptMedia(engine, prepared.media.images, prepared.media.audio);
    },

    respond(run, prepared, request, call) {
      const [{ promptTokenIds, params }] = prepared.prompts;
      // vLLM: the generated message continues the final one unless a new assistant turn was opened.
      const role = request.add_generation_prompt ? 'assistant' : request.messages.at(-1)!.role;
      const last = request.messages.at(-1)!;
      const job = {
        id: responseId('chatcmpl', call.c.req.raw, request.request_id, call.record?.id),
        model: call.adapter ?? engine.info.id,
        promptTokenCount: promptTokenIds.length,
        role,
        // vLLM echoes the final message only when the reply continues it (same role).
        echoText: request.echo ? (last.role === role ? messageText(last) : '') : undefined,
        usage: streamUsageOptions(request.stream_options),
        n: request.n,
        tokens: { tokenizer: engine.tokenizer, promptTokenIds, skipSpecialTokens: params.skipSpecialTokens },
        logprobs: params.logprobs,
        tools: prepared.tools,
      };
      if (request.stream) return sseResponse(chatStream(run, job), () => run.abort());
      return chatNonStreaming(run, job).then(jsonResponse);
    },
  };

  const routes = new Hono();
  routes.post('/v1/chat/completions', serveGenerating(ctx, endpoint));
  return routes;
}
