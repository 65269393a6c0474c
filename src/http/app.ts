import { Hono } from 'hono';
import { methodNotAllowed } from 'hono/method-not-allowed';
import type { ServerConfig } from '../config/server-config.js';
import { servedMaxModelLen } from '../protocol/prompt-limits.js';
import type { EmbeddingService } from '../embeddings/types.js';
import type { Engine, ModelInfo } from '../engine/types.js';
import { createMediaFetcher, resolveMediaConfig, type MediaFetcher, type MediaKind } from '../media/index.js';
import { ChatTemplate, chatTemplateFromTokenizerConfig } from '../tokenizer/chat-template.js';
import type { TemplateThread } from '../tokenizer/template-thread.js';
import { anthropicErrors } from './anthropic/errors.js';
import { bodySizeLimit } from './body-size-limit.js';
import { identifyClient } from './client-identity.js';
import { corsMiddleware } from './cors.js';
import { errorResponse, HttpError, notFound } from './errors.js';
import type { GuideCompiler } from './guided-decoding.js';
import { ServerActivity } from './observability/activity.js';
import { observabilityRoutes, observeRequests } from './observability/middleware.js';
import { chatRoutes } from './routes/chat.js';
import { completionsRoutes } from './routes/completions.js';
import { embeddingsRoutes, generationRefusals } from './routes/embeddings.js';
import { generateRoutes } from './routes/generate.js';
import { healthRoutes } from './routes/health.js';
import { loraRoutes } from './routes/lora.js';
import { messagesRoutes } from './routes/messages.js';
import { responsesRoutes } from './routes/responses.js';
import { modelsRoutes } from './routes/models.js';
import { tokenizeRoutes } from './routes/tokenize.js';
import { apiKeyAuth, hostCheck, jsonContentTypeRequired } from './security/middleware.js';
import { resolveServingLimits, type ServingContext } from './serving/context.js';

export interface AppDeps {
  engine: Engine;
  /**
   * The embedding model the engine serves (an EmbeddingEngine is both): /v1/embeddings answers
   * with it and the generation routes give vLLM's 400 for a pooling model. Left out: none.
   */
  embeddings?: EmbeddingService | null;
  config: ServerConfig;
  /**
   * The chat template to render messages with. Left out, it is read from the engine's
   * tokenizer_config.json when the engine exposes one (`tokenizerConfig`); null turns
   * chat off (400 on /v1/chat/completions).
   */
  chatTemplate?: ChatTemplate | null;
  /**
   * Fetches the media parts of requests. Left out: the runtime-neutral fetcher with the
   * default media config, whose whitelist is empty (remote media is refused with a
   * message naming ALLOWED_MEDIA_DOMAINS_ENV) and which reads no local files. Node
   * passes createNodeMediaFetcher(mediaConfigFromEnv(process.env)).
   */
  mediaFetcher?: MediaFetcher;
  /**
   * Compiles structured-output constraints (guided_json, response_format, ...). Left out:
   * requests that ask for one get a 400 naming the field. The runtime provides it because
   * XGrammar's WebAssembly loads differently in each; Node passes nodeGuideCompiler(engine).
   */
  guideCompiler?: GuideCompiler | null;
  /**
   * Renders chat templates that can be long off the event loop (template-thread.ts). Left
   * out: every rendering runs on the request's thread, within maxChatTemplateSteps. Node
   * passes createNodeTemplateThread().
   */
  templateThread?: TemplateThread | null;
  /**
   * Records every request for the metrics, the request log and shutdown. Left out: one
   * is made with no log sink (the runtime entries pass their own, see serverActivity).
   */
  activity?: ServerActivity;
  /**
   * Routes answered before the local ones, behind the same checks (host, API key, CORS,
   * content type, body limit) and in the same request log: the gateway's forwarded
   * OpenAI routes, which never reach the engine.
   */
  routesBefore?: Hono;
}

/** The activity record for an app serving `engine` under `config`; `log` receives the request log lines. */
export function serverActivity(engine: Engine, config: ServerConfig, log?: (line: string) => void): ServerActivity {
  return new ServerActivity({
    modelName: engine.info.id,
    maxModelLen: servedMaxModelLen({ maxSeqLen: config.maxSeqLen, maxModelLen: engine.info.maxModelLen }),
    log: config.logRequests ? log : undefined,
    logPrompts: config.logPrompts,
    engineStats: () => engine.stats(),
  });
}


/**
 * The HTTP API as a Hono app. Web-standard Request/Response only, so the same app
 * serves under Node (@hono/node-server), workerd and in a browser. Throws when the
 * model's chat template does not parse, so a broken model fails at startup.
 */
export function createApp(deps: AppDeps): Hono {
  const ctx: ServingContext = {
    engine: deps.engine,
    embeddings: deps.embeddings ?? null,
    config: deps.config,
    chatTemplate: deps.chatTemplate !== undefined ? deps.chatTemplate : engineChatTemplate(deps.engine, deps.config.chatTemplate),
    mediaFetcher: deps.mediaFetcher ?? createMediaFetcher(resolveMediaConfig()),
    acceptedMedia: engineAcceptedMedia(deps.engine),
    videoSampling: deps.engine.info.videoSampling,
    guideCompiler: deps.guideCompiler ?? null,
    templateThread: deps.templateThread ?? null,
    limits: resolveServingLimits(deps.engine, deps.config),
  };

  const activity = deps.activity ?? serverActivity(deps.engine, deps.config);
  const { config } = deps;

  const app = new Hono();
  // First: who the request comes from, before any middleware wraps the Request anew.
  app.use(identifyClient());
  app.use(observeRequests(activity));
  // Anthropic's routes answer every refusal in Anthropic's error shape, the checks below included.
  app.use('/v1/messages', anthropicErrors());
  app.use('/v1/messages/*', anthropicErrors());
  // Before the checks, so that preflights are answered on every path and refusals carry the CORS headers too.
  app.use(corsMiddleware(deps.config));
  if (config.allowedHosts !== null) app.use(hostCheck(config.allowedHosts));
  if (config.apiKey !== undefined) app.use(apiKeyAuth(typeof config.apiKey === 'string' ? [config.apiKey] : config.apiKey));
  app.use(
    methodNotAllowed({
      app,
      onMethodNotAllowed: (c, methods) =>
        errorResponse(
          new HttpError(405, 'MethodNotAllowedError', `Method ${c.req.method} is not allowed on ${c.req.path}; allowed: ${methods.join(', ')}.`, null, {
            allow: methods.join(', '),
          }),
        ),
    }),
  );
  if (config.requireJsonContentType) app.use(jsonContentTypeRequired());
  // Bodies past maxRequestBytes are refused before parsing (config/bound-settings.ts).
  const maxBodyBytes = ctx.limits.bounds.maxRequestBytes;
  app.use(
    bodySizeLimit(maxBodyBytes, () =>
      errorResponse(new HttpError(413, 'RequestEntityTooLargeError', `The request body is larger than ${maxBodyBytes} bytes (maxRequestBytes).`)),
    ),
  );

  if (deps.routesBefore !== undefined) app.route('/', deps.routesBefore);
  // An embedding model (vLLM's "embed" task) answers the generation routes with vLLM's 400.
  if (ctx.embeddings !== null) app.route('/', generationRefusals(ctx));
  app.route('/', generateRoutes(ctx));
  app.route('/', completionsRoutes(ctx));
  app.route('/', chatRoutes(ctx));
  app.route('/', messagesRoutes(ctx));
  app.route('/', responsesRoutes(ctx));
  app.route('/', embeddingsRoutes(ctx));
  app.route('/', modelsRoutes(ctx));
  app.route('/', loraRoutes(ctx));
  app.route('/', tokenizeRoutes(ctx));
  app.route('/', healthRoutes(ctx));
  app.route('/', observabilityRoutes(activity));

  app.notFound((c) => errorResponse(notFound(`There is no route ${c.req.method} ${c.req.path}.`)));
  app.onError((error) => errorResponse(error));
  return app;
}

/**
 * The chat template from the engine's tokenizer_config.json, when the engine carries it; with
 * `override` (the chatTemplate setting, vLLM's --chat-template) that template instead, with the
 * model's BOS and EOS tokens.
 */
function engineChatTemplate(engine: Engine, override?: string): ChatTemplate | null {
  const modelConfig = (engine as Engine & { tokenizerConfig?: Record<string, unknown> }).tokenizerConfig;
  if (!modelConfig && override === undefined) return null;
  const tokenizerConfig = override === undefined ? modelConfig! : { ...modelConfig, chat_template: override };
  const { tokenizer } = engine;
  const tokenText = (id: number | null | undefined) => (id === null || id === undefined ? undefined : tokenizer.idToToken(id));
  try {
    return chatTemplateFromTokenizerConfig(tokenizerConfig, {
      bosToken: tokenText(tokenizer.bosTokenId),
      eosToken: tokenText(tokenizer.eosTokenIds[0]),
    });
  } catch (error) {
    const which = override === undefined ? `The model's chat template (tokenizer_config.json "chat_template")` : 'The chat template of the chatTemplate setting (--chat-template)';
    throw new Error(`${which} is not valid Jinja: ${(error as Error).message}`);
  }
}

/**
 * The media kinds the engine's model takes, when its info declares them (a multimodal
 * engine sets `info.acceptedMedia`); none otherwise: every model served today is
 * text-only, so media parts are fetched, decoded and then refused.
 */
function engineAcceptedMedia(engine: Engine): readonly MediaKind[] {
  return (engine.info as ModelInfo & { acceptedMedia?: readonly MediaKind[] }).acceptedMedia ?? [];
}
