import { Hono } from 'hono';
import { ChatCompletionRequestSchema } from '../../protocol/openai-chat.js';
import { checkPromptTokenLimit, truncatePromptTokens } from '../../protocol/prompt-limits.js';
import { chatToSamplingParams } from '../../protocol/sampling-params.js';
import { refuseUnsupported, unsupportedChatFeatures, unsupportedByEngine } from '../../protocol/unsupported.js';
import { parseRequest } from '../../protocol/validate.js';
import { buildChatPrompt } from '../chat-prompt.js';
import { GenerationRun } from '../generation.js';
import { requestGuide } from '../guided-decoding.js';
import { responseId } from '../ids.js';
import { readJsonBody } from '../request-body.js';
import { chatNonStreaming, chatStream } from '../serving-chat.js';
import { loadChatRequestMedia } from '../serving-media.js';
import { promptLimits, samplingContext, type ServingContext } from '../serving-context.js';
import { checkModel } from '../serving-models.js';
import { sseResponse } from '../sse.js';
import { streamUsageOptions } from '../usage.js';

/** POST /v1/chat/completions: messages rendered with the model's chat template, then generated from. */
export function chatRoutes(ctx: ServingContext): Hono {
  const routes = new Hono();
  const { engine } = ctx;

  routes.post('/v1/chat/completions', async (c) => {
    const request = parseRequest(ChatCompletionRequestSchema, await readJsonBody(c.req.raw));
    const adapter = checkModel(request.model, engine.info, engine.adapters);
    refuseUnsupported(unsupportedChatFeatures(request));
    // Structured output is compiled with the rest of validation: a constraint the server
    // cannot serve is refused before any prompt work.
    const guide = await requestGuide(ctx.guideCompiler, request);
    // Media parts are fetched and decoded before the model may refuse them (text-only today).
    await loadChatRequestMedia(ctx, request.messages, c.req.raw.signal);

    // Templates see tools and documents as transformers passes them (tool_choice "none" only).
    const templateVariables: Record<string, unknown> = { ...request.chat_template_kwargs };
    if (request.tools !== undefined) templateVariables.tools = request.tools;
    if (request.documents !== undefined) templateVariables.documents = request.documents;
    const prompt = buildChatPrompt(ctx.chatTemplate, engine.tokenizer, request.messages, {
      addGenerationPrompt: request.add_generation_prompt,
      continueFinalMessage: request.continue_final_message,
      templateVariables,
      addSpecialTokens: request.add_special_tokens,
      templateOverride: request.chat_template,
    });
    const promptTokenIds = truncatePromptTokens(prompt.tokenIds, request.truncate_prompt_tokens);
    checkPromptTokenLimit(promptTokenIds.length, promptLimits(ctx), 'openai', 'messages');
    const params = { ...chatToSamplingParams(request, samplingContext(ctx), promptTokenIds.length), guide };
    refuseUnsupported(unsupportedByEngine(params, engine.features));

    const run = await GenerationRun.start(engine, promptTokenIds, params, c.req.raw.signal, adapter);
    const job = {
      id: responseId('chatcmpl', c.req.raw, request.request_id),
      model: adapter ?? engine.info.id,
      promptTokenCount: promptTokenIds.length,
      // vLLM: the generated message continues the final one unless a new assistant turn was opened.
      role: request.add_generation_prompt ? 'assistant' : request.messages.at(-1)!.role,
      usage: streamUsageOptions(request.stream_options),
      n: request.n,
      tokens: { tokenizer: engine.tokenizer, promptTokenIds, skipSpecialTokens: params.skipSpecialTokens },
      logprobs: params.logprobs,
    };
    if (request.stream) return sseResponse(chatStream(run, job), () => run.abort());
    return c.json(await chatNonStreaming(run, job));
  });

  return routes;
}
