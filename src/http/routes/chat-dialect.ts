import type { z } from 'zod';
import type { ChatCompletionRequest } from '../../protocol/openai-chat.js';
import type { GenerationRun } from '../generation.js';
import type { ChatJob } from '../serving/chat.js';
import type { ServingContext } from '../serving/context.js';
import type { GeneratingEndpoint, ServingCall } from '../serving/spine.js';
import { chatEndpoint, chatJob, type PreparedChat } from './chat.js';

/** A dialect served as the chat completion it translates into (vLLM serves /v1/messages and /v1/responses so). */
export interface ChatDialect<Schema extends z.ZodObject> {
  schema: Schema;
  /** The request as a validated chat request (parsed with the chat schema). */
  toChat(request: z.output<Schema>): ChatCompletionRequest;
  /** The dialect's response from the chat run and the job the chat response would be built from. */
  respond(run: GenerationRun, job: ChatJob, request: z.output<Schema>, call: ServingCall): Response | Promise<Response>;
}

/**
 * The spine's hooks for a dialect: its own schema first, then every check and every step of
 * the chat endpoint on the translated request (model, bounds, refusals, tools, guided
 * decoding, media, the template), and the dialect's response.
 */
export function chatDialectEndpoint<Schema extends z.ZodObject>(ctx: ServingContext, dialect: ChatDialect<Schema>): GeneratingEndpoint<Schema, PreparedChat> {
  const chat = chatEndpoint(ctx);
  // The spine's hooks each get the dialect's request: it is translated once.
  const translated = new WeakMap<object, ChatCompletionRequest>();
  const chatOf = (request: z.output<Schema>): ChatCompletionRequest => {
    let chatRequest = translated.get(request as object);
    if (chatRequest === undefined) translated.set(request as object, (chatRequest = dialect.toChat(request)));
    return chatRequest;
  };
  return {
    schema: dialect.schema,
    warnIgnoredFields: false,
    model: (request) => chatOf(request).model,
    bounded: (request) => chatOf(request),
    unsupported: (request) => chat.unsupported(chatOf(request)),
    prepare: (request, call) => chat.prepare(chatOf(request), call),
    encodeMedia: chat.encodeMedia,
    // Neither dialect has logprobs.
    logprobParam: () => null,
    respond: (run, prepared, request, call) => dialect.respond(run as GenerationRun, chatJob(ctx, prepared, chatOf(request), call), request, call),
  };
}
