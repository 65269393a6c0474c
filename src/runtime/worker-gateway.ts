/**
 * The gateway-only Worker entry (`wrangler deploy --env gateway`): authentication,
 * per-key limits, validation and streaming at the edge, generation on a fleet of
 * upstreams (src/gateway/upstreams.ts) with weights, health checks and failover. It
 * bundles the tokenizer but neither onnxruntime nor the model, so it stays far below
 * the size limits (see docs/workerd.md).
 *
 *  - /v1/completions, /v1/chat/completions: validated here, forwarded as received in
 *    the upstream's vocabulary (tools, logit_bias, n, guided_*, ... included), the
 *    upstream's stream passed through as it arrives (src/gateway/openai-proxy.ts).
 *  - /v1/models: the fleet's models, merged.
 *  - /generate and the rest: the shared app on a RemoteEngine whose requests go through
 *    the fleet as OpenAI completions, so /generate works with upstreams that only speak
 *    the OpenAI API; structured output is forwarded, not compiled here.
 */
import type { ServerConfig } from '../config/server-config.js';
import { RemoteEngine, type FetchLike } from '../engine/remote-engine.js';
import { forwardingGuideCompiler } from '../engine/remote-guides.js';
import type { TokenIdSource } from '../engine/remote-request.js';
import { translateRequest } from '../gateway/dialects.js';
import { limitKey, onStreamEnd, type EdgeLimits, type Release } from '../gateway/edge-limits.js';
import { writeJson } from '../gateway/json-text.js';
import { mergedModels } from '../gateway/merged-models.js';
import { forwardOpenAI, OPENAI_ROUTES, type EdgeModel } from '../gateway/openai-proxy.js';
import { UpstreamPool } from '../gateway/upstream-pool.js';
import { upstreamsFromEnv } from '../gateway/upstreams.js';
import { Hono } from 'hono';
import { createApp } from '../http/app.js';
import { errorResponse, HttpError } from '../http/errors.js';
import { readJsonBody } from '../http/request-body.js';
import { ProtocolError } from '../protocol/errors.js';
import { parseJsonBody } from '../protocol/json.js';
import { apiKeyChecker, type ApiKeyChecker } from '../http/security/api-key.js';
import { refuseAtFront } from '../http/security/middleware.js';
import { apiKeyFromEnv } from '../config/server-config.js';
import { serverConfigFromEnv, WORKER_API_KEY_VARS, type WorkerEnv } from './worker-env.js';
import type { WorkerContext } from './worker-handler.js';
import { edgeLimitsFromEnv } from './worker-limits.js';
import { EMBEDDED_MODEL_DIR, embeddedTokenizerFiles } from './worker-tokenizer-files.js';

export { KeyConcurrency } from './worker-limits.js';

/** POST routes the gateway forwards itself (the app checks the others). */
const FORWARDED_JSON_ROUTES: ReadonlySet<string> = new Set(Object.keys(OPENAI_ROUTES));

/** How often an isolate re-checks its upstreams' /health in the background of a request. */
const DEFAULT_HEALTH_CHECK_SECONDS = 10;

interface Gateway {
  config: ServerConfig;
  apiKeys: ApiKeyChecker | null;
  pool: UpstreamPool;
  limits: EdgeLimits;
  app: { fetch(request: Request): Response | Promise<Response> };
  healthCheckMs: number;
  lastProbe: number;
}

/** RemoteEngine's upstream calls, sent through the fleet for `model` in each upstream's vocabulary. */
function fleetFetch(pool: UpstreamPool, model: string): FetchLike {
  return async (_url, init) => {
    const body = parseJsonBody(String(init.body)) as Record<string, unknown>;
    try {
      const { response } = await pool.send(model, '/v1/completions', (target) => writeJson(translateRequest(body, 'completions', target)), init.signal ?? undefined);
      return response;
    } catch (error) {
      // A field no upstream can honour: RemoteEngine reports an upstream 400 to the client as a 400.
      if (error instanceof ProtocolError) {
        return Response.json({ object: 'error', message: error.message, param: error.param, code: 400 }, { status: 400 });
      }
      throw error;
    }
  };
}

function tokenIdSource(value: unknown): TokenIdSource {
  const source = typeof value === 'string' && value.trim() !== '' ? value.trim() : 'usage';
  if (source !== 'usage' && source !== 'logprobs') throw new Error(`UPSTREAM_TOKEN_IDS must be "usage" or "logprobs", got ${JSON.stringify(source)}.`);
  return source;
}

function seconds(value: unknown, fallback: number): number {
  const number = Number(value);
  return value !== undefined && value !== '' && Number.isFinite(number) && number > 0 ? number : fallback;
}

function build(env: WorkerEnv): Gateway {
  const config = serverConfigFromEnv(env, EMBEDDED_MODEL_DIR);
  const targets = upstreamsFromEnv(env, config.servedModelName);
  if (targets.length === 0) {
    throw new Error('The gateway has no upstream: set UPSTREAMS or UPSTREAM_URL, or bind a service as UPSTREAM.');
  }
  const pool = new UpstreamPool(targets, { retryDownAfterMs: seconds(env.UPSTREAM_RETRY_DOWN_SECONDS, 10) * 1000 });
  // The embedded tokenizer is the served model's: /generate, /tokenize and prompt checks use it.
  const files = embeddedTokenizerFiles();
  const engine = new RemoteEngine({
    files,
    servedModelName: config.servedModelName,
    upstream: {
      url: 'https://upstream-fleet',
      fetch: fleetFetch(pool, pool.models().includes(config.servedModelName) ? config.servedModelName : targets[0].model),
      tokenIds: tokenIdSource(env.UPSTREAM_TOKEN_IDS),
    },
  });
  const edgeModel: EdgeModel = {
    name: config.servedModelName,
    tokenizer: engine.tokenizer,
    maxModelLen: Math.min(engine.info.maxModelLen, config.maxSeqLen ?? Infinity),
  };
  const app = createApp({ engine, config, guideCompiler: forwardingGuideCompiler, routesBefore: fleetRoutes(pool, edgeModel) });
  const { apiKey } = config;
  return {
    config,
    apiKeys: apiKey === undefined ? null : apiKeyChecker(typeof apiKey === 'string' ? [apiKey] : apiKey),
    pool,
    limits: edgeLimitsFromEnv(env),
    app,
    healthCheckMs: seconds(env.HEALTH_CHECK_SECONDS, DEFAULT_HEALTH_CHECK_SECONDS) * 1000,
    lastProbe: Date.now(),
  };
}

function tooMany(message: string, retryAfterSeconds: number): Response {
  return errorResponse(new HttpError(429, 'TooManyRequestsError', message, null, { 'retry-after': String(retryAfterSeconds) }));
}

/** `response` with `release` called once its body is done (or at once when it has none). */
function releasingAtEnd(response: Response, release: Release): Response {
  if (response.body === null) {
    release();
    return response;
  }
  return new Response(onStreamEnd(response.body, release), response);
}

/** The routes the fleet answers directly: models merged, OpenAI requests forwarded as received. */
function fleetRoutes(pool: UpstreamPool, edgeModel: EdgeModel): Hono {
  const routes = new Hono();
  routes.get('/v1/models', async (c) => c.json(await mergedModels(pool)));
  for (const [path, openAIRoute] of Object.entries(OPENAI_ROUTES)) {
    routes.post(path, async (c) => forwardOpenAI(openAIRoute, await readJsonBody(c.req.raw), pool, edgeModel, c.req.raw.signal));
  }
  return routes;
}

export function createGatewayHandler() {
  const gateways = new WeakMap<object, Gateway>();

  function gatewayFor(env: WorkerEnv): Gateway {
    let gateway = gateways.get(env);
    if (gateway === undefined) {
      gateway = build(env);
      gateways.set(env, gateway);
    }
    return gateway;
  }

  return {
    async fetch(request: Request, env: WorkerEnv, ctx?: WorkerContext): Promise<Response> {
      let gateway: Gateway;
      try {
        gateway = gatewayFor(env);
      } catch (error) {
        // No configuration to check against: the key alone guards the reason.
        const key = apiKeyFromEnv(env, WORKER_API_KEY_VARS);
        if (key !== undefined) {
          const refused = await refuseAtFront(request, { allowedHosts: null, apiKeys: apiKeyChecker([key]), requireJsonContentType: false, jsonRoutes: new Set() });
          if (refused !== null) return refused;
        }
        console.error('The gateway could not start:', error);
        return errorResponse(new HttpError(500, 'InternalServerError', `The gateway could not start: ${(error as Error).message}`));
      }
      // The forwarded OpenAI routes skip the app, so its checks (host, API key as vLLM's
      // --api-key, JSON content type) run here first, before any limit is spent.
      const refused = await refuseAtFront(request, {
        allowedHosts: gateway.config.allowedHosts,
        apiKeys: gateway.apiKeys,
        requireJsonContentType: gateway.config.requireJsonContentType,
        jsonRoutes: FORWARDED_JSON_ROUTES,
      });
      if (refused !== null) return refused;
      if (Date.now() - gateway.lastProbe >= gateway.healthCheckMs) {
        gateway.lastProbe = Date.now();
        ctx?.waitUntil(gateway.pool.probe());
      }
      if (request.method !== 'POST') return gateway.app.fetch(request);
      const { rate, concurrency, concurrencyRetryAfterSeconds } = gateway.limits;
      const key = rate !== null || concurrency !== null ? await limitKey(request) : '';
      if (rate !== null) {
        const decision = await rate.limit(key);
        if (!decision.allowed) return tooMany('Rate limit exceeded for this API key. Retry later.', decision.retryAfterSeconds);
      }
      if (concurrency === null) return gateway.app.fetch(request);
      const release = await concurrency.acquire(key, ctx ? (p) => ctx.waitUntil(p) : undefined);
      if (release === null) return tooMany('Too many concurrent requests for this API key. Retry when one has finished.', concurrencyRetryAfterSeconds);
      try {
        return releasingAtEnd(await gateway.app.fetch(request), release);
      } catch (error) {
        release();
        throw error;
      }
    },

    /** Cron Trigger: health-check the fleet (this isolate's view of it). */
    async scheduled(_controller: unknown, env: WorkerEnv, ctx: WorkerContext): Promise<void> {
      ctx.waitUntil(gatewayFor(env).pool.probe());
    },
  };
}

export default createGatewayHandler();
