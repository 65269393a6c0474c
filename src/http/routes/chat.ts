import { Hono } from 'hono';
import { ChatCompletionRequestSchema, messageText, type ChatCompletionRequest } from '../../protocol/openai-chat.js';
import { checkPromptTokenLimit, promptTokenCeiling, truncatePromptTokens } from '../../protocol/prompt-limits.js';
import { chatToSamplingParams } from '../../protocol/sampling-params.js';
import { unsupportedChatFeatures } from '../../protocol/unsupported.js';
import { buildChatPrompt, chatTemplateVariables, refuseUntrustedTemplate } from '../chat-prompt.js';
import { requestGuide } from '../guided-decoding.js';
import { requestClient } from '../client-identity.js';
import { requestToolCalling, toolCallGuide } from '../serving/tools.js';
import { chatReasoning, type ChatReasoning } from '../serving/reasoning.js';
import { responseId } from '../ids.js';
import { jsonResponse } from '../json-body.js';
import { chatNonStreaming, chatStream, type ChatJob } from '../serving/chat.js';
import { loadChatRequestMedia } from '../serving/media.js';
import { prepareChatMedia } from '../chat-media.js';
import { encodePromptMedia } from '../serving/multimodal.js';
import { inlinePieceBound, refuseOverTokenizeBound, templateOffLoop, type ServingContext } from '../serving/context.js';
import { serveGenerating, type GeneratingEndpoint, type PreparedPrompt, type ServingCall } from '../serving/spine.js';
import { sseResponse } from '../sse.js';
import { streamUsageOptions } from '../usage.js';

export interface PreparedChat {
  prompts: [PreparedPrompt];
  tools: ReturnType<typeof requestToolCalling>;
  /** How the output splits into reasoning and content (the reasoningParser setting); null: all content. */
  reasoning: ChatReasoning | null;
  media: Awaited<ReturnType<typeof prepareChatMedia>>;
}

/** POST /v1/chat/completions: messages rendered with the model's chat template, then generated from. */
export function chatRoutes(ctx: ServingContext): Hono {
  const routes = new Hono();
  routes.post('/v1/chat/completions', serveGenerating(ctx, chatEndpoint(ctx)));
  return routes;
}

/**
 * The chat endpoint's hooks. The other dialects (/v1/messages, /v1/responses) translate
 * their requests into a chat request and serve it through these same hooks, so what the
 * chat route learns (templates, tools, reasoning, media), they learn.
 */
export function chatEndpoint(ctx: ServingContext): GeneratingEndpoint<typeof ChatCompletionRequestSchema, PreparedChat> {
  const { engine, limits } = ctx;
  return {
    schema: ChatCompletionRequestSchema,
    warnIgnoredFields: true,
    model: (request) => request.model,
    unsupported: unsupportedChatFeatures,
    logprobParam: (request) => (request.prompt_logprobs !== undefined ? 'prompt_logprobs' : 'top_logprobs'),

    async prepare(request, call) {
      refuseUntrustedTemplate(ctx.config.trustRequestChatTemplate, request);
      const tools = requestToolCalling(request, ctx.config.toolCallParser);
      // Structured output is compiled with the rest of validation: a constraint the server
      // cannot serve is refused before any prompt work. Named and "required" tool calls are
      // structured output too.
      const guide =
        tools?.schema !== undefined
          ? await toolCallGuide(ctx.guideCompiler, request, { ...tools, schema: tools.schema }, limits.guided, requestClient(call.c))
          : await requestGuide(ctx.guideCompiler, request, limits.guided, requestClient(call.c));
      // Media parts are fetched and decoded before the model may refuse them (text-only today).
      const media = await loadChatRequestMedia(ctx, request.messages, call.signal, requestClient(call.c));
      const chatMedia = await prepareChatMedia(ctx, media, call.signal, requestClient(call.c));

      // Templates see tools and documents as vLLM passes them (null when absent).
      const templateVariables = chatTemplateVariables(request);
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
        templateOffLoop: templateOffLoop(ctx, call.c),
        stopAfter: ceiling,
        // Truncating: only the last tokens are tokenized where the text can be cut; a piece
        // tokenized whole is bounded by its length first.
        keepLast: request.truncate_prompt_tokens,
        lengthCeiling: limits.tokenizeCeiling,
        refuseAtLeast: (atLeast) =>
          truncating ? refuseOverTokenizeBound(ctx, atLeast, 'messages') : checkPromptTokenLimit(atLeast, limits.prompt, 'openai', 'messages', true),
        multimodal: chatMedia.expansion,
        signal: call.signal,
        client: requestClient(call.c),
        inlinePieces: inlinePieceBound(ctx, 'messages'),
      });
      call.record?.notePrompt(prompt.text);
      const promptTokenIds = truncatePromptTokens(prompt.tokenIds, request.truncate_prompt_tokens);
      const stoppedEarly = promptTokenIds.length > ceiling;
      checkPromptTokenLimit(promptTokenIds.length, limits.prompt, 'openai', 'messages', stoppedEarly);
      const params = { ...chatToSamplingParams(request, limits.sampling, promptTokenIds.length), guide };
      // A parser's tags are special tokens in the models that write them (vLLM does the same).
      if (tools?.keepSpecialTokens) params.skipSpecialTokens = false;
      const reasoning = chatReasoning(ctx.config.reasoningParser, request, prompt.text, guide !== undefined);
      return { prompts: [{ promptTokenIds, params }], tools, reasoning, media: chatMedia };
    },

    async encodeMedia(prepared) {
      prepared.prompts[0].placeholders = await encodePromptMedia(engine, prepared.media.images, prepared.media.audio);
    },

    respond(run, prepared, request, call) {
      const job = chatJob(ctx, prepared, request, call);
      if (request.stream) return sseResponse(chatStream(run, job), run);
      return chatNonStreaming(run, job).then(jsonResponse);
    },
  };
}

/** What the chat response is built from (serving/chat.ts), for a prepared chat request. */
export function chatJob(ctx: ServingContext, prepared: PreparedChat, request: ChatCompletionRequest, call: ServingCall): ChatJob {
  const { engine } = ctx;
  const [{ promptTokenIds, params }] = prepared.prompts;
  // vLLM: the generated message continues the final one unless a new assistant turn was opened.
  const role = request.add_generation_prompt ? 'assistant' : request.messages.at(-1)!.role;
  const last = request.messages.at(-1)!;
  return {
    id: responseId('chatcmpl', call.c.req.raw, request.request_id, call.record?.id),
    model: call.adapter ?? engine.info.id,
    promptTokenCount: promptTokenIds.length,
    role,
    // vLLM echoes the final message only when the reply continues it (same role).
    echoText: request.echo ? (last.role === role ? messageText(last) : '') : undefined,
    usage: streamUsageOptions(request.stream_options, ctx.config.enablePromptTokensDetails),
    n: request.n,
    tokens: { tokenizer: engine.tokenizer, promptTokenIds, skipSpecialTokens: params.skipSpecialTokens, asTokenIds: request.return_tokens_as_token_ids },
    logprobs: params.logprobs,
    tools: prepared.tools,
    reasoning: prepared.reasoning,
  };
}
