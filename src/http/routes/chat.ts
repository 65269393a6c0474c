import { Hono } from 'hono';
import { ChatCompletionRequestSchema, messageText } from '../../protocol/openai-chat.js';
import { checkPromptTokenLimit, promptTokenCeiling, truncatePromptTokens } from '../../protocol/prompt-limits.js';
import { chatToSamplingParams } from '../../protocol/sampling-params.js';
import { refuseUnsupported, unsupportedChatFeatures, unsupportedByEngine } from '../../protocol/unsupported.js';
import { parseRequest } from '../../protocol/validate.js';
import { buildChatPrompt } from '../chat-prompt.js';
import { GenerationRun } from '../generation.js';
import { requestGuide } from '../guided-decoding.js';
import { requestToolCalling, toolCallGuide } from '../serving-tools.js';
import { responseId } from '../ids.js';
import { warnIgnoredFields } from '../ignored-fields.js';
import { jsonResponse } from '../json-body.js';
import { readJsonBody } from '../request-body.js';
import { chatNonStreaming, chatStream } from '../serving-chat.js';
import { loadChatRequestMedia } from '../serving-media.js';
import { prepareChatMedia } from '../chat-media.js';
import { encodePromptMedia } from '../serving-multimodal.js';
import { checkBounds, checkLogprobs, guidedLimits, inlinePieceBound, templateBudget, templateOffLoop, promptLimits, samplingContext, tokenizeBound, type ServingContext } from '../serving-context.js';
import { checkModel } from '../serving-models.js';
import { sseResponse } from '../sse.js';
import { streamUsageOptions } from '../usage.js';

/** POST /v1/chat/completions: messages rendered with the model's chat template, then generated from. */
export function chatRoutes(ctx: ServingContext): Hono {
  const routes = new Hono();
  const { engine } = ctx;

  routes.post('/v1/chat/completions', async (c) => {
    const body = await readJsonBody(c.req.raw);
    const request = parseRequest(ChatCompletionRequestSchema, body);
    warnIgnoredFields(ChatCompletionRequestSchema, body);
    const adapter = checkModel(request.model, engine.info, engine.adapters);
    checkBounds(ctx, request);
    refuseUnsupported(unsupportedChatFeatures(request));
    const tools = requestToolCalling(request, ctx.config.toolCallParser);
    // Structured output is compiled with the rest of validation: a constraint the server
    // cannot serve is refused before any prompt work. Named and "required" tool calls are
    // structured output too.
    const guide =
      tools?.schema !== undefined
        ? await toolCallGuide(ctx.guideCompiler, request, { ...tools, schema: tools.schema }, guidedLimits(ctx))
        : await requestGuide(ctx.guideCompiler, request, guidedLimits(ctx));
    // Media parts are fetched and decoded before the model may refuse them (text-only today).
    const media = await loadChatRequestMedia(ctx, request.messages, c.req.raw.signal);
    const chatMedia = await prepareChatMedia(ctx, media, c.req.raw.signal);

    // Templates see tools and documents as transformers passes them.
    const templateVariables: Record<string, unknown> = { ...request.chat_template_kwargs };
    if (request.tools !== undefined) templateVariables.tools = request.tools;
    if (request.documents !== undefined) templateVariables.documents = request.documents;
    // Tokenizing can stop once the prompt (its last truncate_prompt_tokens, when truncating) is surely too long.
    const ceiling = promptTokenCeiling(promptLimits(ctx), 'openai');
    const truncating = request.truncate_prompt_tokens !== undefined;
    const prompt = await buildChatPrompt(ctx.chatTemplate, engine.tokenizer, request.messages, {
      addGenerationPrompt: request.add_generation_prompt,
      continueFinalMessage: request.continue_final_message,
      templateVariables,
      addSpecialTokens: request.add_special_tokens,
      templateOverride: request.chat_template,
      templateBudget: templateBudget(ctx),
      templateOffLoop: templateOffLoop(ctx, c.req.raw.signal),
      stopAfter: ceiling,
      // Truncating: only the last tokens are tokenized where the text can be cut; a piece
      // tokenized whole is bounded by its length first.
      keepLast: request.truncate_prompt_tokens,
      lengthCeiling: tokenizeBound(ctx).ceiling,
      refuseAtLeast: (atLeast) =>
        truncating ? tokenizeBound(ctx).refuse(atLeast, 'messages') : checkPromptTokenLimit(atLeast, promptLimits(ctx), 'openai', 'messages', true),
      multimodal: chatMedia.expansion,
      signal: c.req.raw.signal,
      inlinePieces: inlinePieceBound(ctx, 'messages'),
    });
    c.get('requestRecord')?.notePrompt(prompt.text);
    const promptTokenIds = truncatePromptTokens(prompt.tokenIds, request.truncate_prompt_tokens);
    const stoppedEarly = promptTokenIds.length > ceiling;
    checkPromptTokenLimit(promptTokenIds.length, promptLimits(ctx), 'openai', 'messages', stoppedEarly);
    const params = { ...chatToSamplingParams(request, samplingContext(ctx), promptTokenIds.length), guide };
    // A parser's tags are special tokens in the models that write them (vLLM does the same).
    if (tools?.keepSpecialTokens) params.skipSpecialTokens = false;
    refuseUnsupported(unsupportedByEngine(params, engine.features));
    checkLogprobs(ctx, [{ ...params, promptTokenCount: promptTokenIds.length }], request.prompt_logprobs !== undefined ? 'prompt_logprobs' : 'top_logprobs');

    const placeholders = await encodePromptMedia(engine, chatMedia.images, chatMedia.audio);
    const run = await GenerationRun.start(engine, promptTokenIds, params, c.req.raw.signal, c.get('requestRecord'), { placeholders, adapter });
    // vLLM: the generated message continues the final one unless a new assistant turn was opened.
    const role = request.add_generation_prompt ? 'assistant' : request.messages.at(-1)!.role;
    const last = request.messages.at(-1)!;
    const job = {
      id: responseId('chatcmpl', c.req.raw, request.request_id, c.get('requestRecord')?.id),
      model: adapter ?? engine.info.id,
      promptTokenCount: promptTokenIds.length,
      role,
      // vLLM echoes the final message only when the reply continues it (same role).
      echoText: request.echo ? (last.role === role ? messageText(last) : '') : undefined,
      usage: streamUsageOptions(request.stream_options, ctx.config.enablePromptTokensDetails),
      n: request.n,
      tokens: { tokenizer: engine.tokenizer, promptTokenIds, skipSpecialTokens: params.skipSpecialTokens },
      logprobs: params.logprobs,
      tools,
    };
    if (request.stream) return sseResponse(chatStream(run, job), () => run.abort());
    return jsonResponse(await chatNonStreaming(run, job));
  });

  return routes;
}
