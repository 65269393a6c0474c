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
import type { ServerConfig } from '../../config/server-config.js';
import { RemoteEngine, type FetchLike } from '../../engine/remote/remote-engine.js';
import { forwardingGuideCompiler } from '../../engine/remote/guides.js';
import type { TokenIdSource } from '../../engine/remote/request.js';
import { ClientKeys, type ClientKey } from '../../gateway/client-keys.js';
import { translateRequest } from '../../gateway/dialects.js';
import { limitKey, MemoryRateLimiter, MemoryTokenBudget, onStreamEnd, type ConcurrencyLimiter, type EdgeLimits, type RateLimiter } from '../../gateway/edge-limits.js';
import { currentExchange, newExchange, withExchange, type GatewayExchange } from '../../gateway/exchange.js';
import { GatewayMetrics } from '../../gateway/gateway-metrics.js';
import { writeJson } from '../../gateway/json-text.js';
import { mergedModels } from '../../gateway/merged-models.js';
import { forwardOpenAI, OPENAI_ROUTES, promptCharBound, type EdgeModel } from '../../gateway/openai-proxy.js';
import { UpstreamPool } from '../../gateway/upstream-pool.js';
import { tapUsage } from '../../gateway/usage-tap.js';
import { upstreamsFromEnv } from '../../gateway/upstreams.js';
import { Hono } from 'hono';
import { createApp, serverActivity } from '../../http/app.js';
import { errorResponse, HttpError } from '../../http/errors.js';
import { PROMETHEUS_CONTENT_TYPE } from '../../http/observability/prometheus.js';
import { readJsonBody } from '../../http/request-body.js';
import { ProtocolError } from '../../common/protocol-error.js';
import { parseJsonBody } from '../../protocol/json.js';
import { apiKeyChecker, type ApiKeyChecker } from '../../http/security/api-key.js';
import { refuseAtFront } from '../../http/security/middleware.js';
import { apiKeyFromEnv } from '../../config/server-config.js';
import { serverConfigFromEnv, WORKER_API_KEY_VARS, type WorkerEnv } from './env.js';
import type { WorkerContext } from './handler.js';
import { edgeLimitsFromEnv } from './limits.js';
import { EMBEDDED_MODEL_DIR, embeddedTokenizerFiles } from './tokenizer-files.js';

export { KeyConcurrency } from './limits.js';

/** POST routes the gateway forwards itself (the app checks the others). */
const FORWARDED_JSON_ROUTES: ReadonlySet<string> = new Set(Object.keys(OPENAI_ROUTES));

/** How often an isolate re-checks its upstreams' /health in the background of a request. */
const DEFAULT_HEALTH_CHECK_SECONDS = 10;

/** The limits one client key spends against. */
interface KeyedLimits {
  rate: RateLimiter | null;
  concurrency: ConcurrencyLimiter | null;
  tokens: MemoryTokenBudget | null;
}

interface Gateway {
  config: ServerConfig;
  clientKeys: ClientKeys | null;
  pool: UpstreamPool;
  limits: EdgeLimits;
  /** Keys with limits of their own, by name; the others use `defaultLimits`. */
  keyLimits: Map<string, KeyedLimits>;
  defaultLimits: KeyedLimits;
  metrics: GatewayMetrics;
  app: { fetch(request: Request): Response | Promise<Response> };
  healthCheckMs: number;
  lastProbe: number;
  /** The first health check, which /health waits for so readiness is never a guess. */
  firstProbe: Promise<void> | null;
}

/** RemoteEngine's upstream calls, sent through the fleet for `model` in each upstream's vocabulary. */
function fleetFetch(pool: UpstreamPool, model: string): FetchLike {
  return async (_url, init) => {
    const body = parseJsonBody(String(init.body)) as Record<string, unknown>;
    const exchange = currentExchange();
    try {
      const { response, firstByteMs } = await pool.send(model, '/v1/completions', (target) => writeJson(translateRequest(body, 'completions', target)), {
        signal: init.signal ?? undefined,
        stream: true,
        headers: exchange?.upstreamHeaders,
        onAttempt: (target) => {
          if (exchange === undefined) return;
          exchange.upstream = target.name;
          exchange.attempts += 1;
        },
      });
      if (exchange === undefined || response.body === null) return response;
      exchange.firstByteMs = firstByteMs;
      const contentType = response.headers.get('content-type') ?? '';
      return new Response(tapUsage(response.body, contentType, exchange.usage), response);
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

function count(value: unknown, name: string, fallback: number): number {
  if (value === undefined || value === null || value === '') return fallback;
  const number = Number(value);
  if (!Number.isInteger(number) || number < 1) throw new Error(`${name} must be a positive whole number, got ${JSON.stringify(value)}.`);
  return number;
}

function keyedLimits(keys: ClientKeys | null, limits: EdgeLimits, defaults: KeyedLimits): Map<string, KeyedLimits> {
  const byName = new Map<string, KeyedLimits>();
  for (const key of keys?.all() ?? []) {
    const own = key.limits;
    if (Object.keys(own).length === 0) continue;
    byName.set(key.name, {
      rate: own.rateLimitRequests !== undefined ? new MemoryRateLimiter(own.rateLimitRequests, own.rateLimitPeriodSeconds ?? limits.periodSeconds) : defaults.rate,
      concurrency: own.maxConcurrentRequests !== undefined ? limits.concurrencyWith(own.maxConcurrentRequests) : defaults.concurrency,
      tokens: own.tokensPerMinute !== undefined ? new MemoryTokenBudget(own.tokensPerMinute) : defaults.tokens,
    });
  }
  return byName;
}

async function build(env: WorkerEnv): Promise<Gateway> {
  // First: a key setting that cannot be read stops the gateway, it never runs open.
  const clientKeys = await ClientKeys.fromEnv(env);
  const config = serverConfigFromEnv(env, EMBEDDED_MODEL_DIR);
  const targets = upstreamsFromEnv(env, config.servedModelName);
  if (targets.length === 0) {
    throw new Error('The gateway has no upstream: set UPSTREAMS or UPSTREAM_URL, or bind a service as UPSTREAM.');
  }
  const pool = new UpstreamPool(targets, {
    retryDownAfterMs: seconds(env.UPSTREAM_RETRY_DOWN_SECONDS, 10) * 1000,
    retry: {
      maxAttempts: count(env.UPSTREAM_MAX_ATTEMPTS, 'UPSTREAM_MAX_ATTEMPTS', 3),
      budgetMs: seconds(env.UPSTREAM_RETRY_BUDGET_SECONDS, 2) * 1000,
    },
  });
  const metrics = new GatewayMetrics(config.logRequests ? (line) => console.log(line) : null);
  pool.onHealthChange = (target, up) => {
    if (!up) metrics.ejected(target.name);
  };
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
  const maxModelLen = Math.min(engine.info.maxModelLen, config.maxSeqLen ?? Infinity);
  const edgeModel: EdgeModel = {
    name: config.servedModelName,
    tokenizer: engine.tokenizer,
    maxModelLen,
    maxPromptChars: promptCharBound(engine.tokenizer, maxModelLen),
  };
  const limits = edgeLimitsFromEnv(env);
  const defaultLimits: KeyedLimits = { rate: limits.rate, concurrency: limits.concurrency, tokens: limits.tokens };
  // The front checks every key (API_KEY and API_KEYS) before the app runs; the app's own
  // request log is off, the gateway writes one line per request with its upstream and key.
  const appConfig: ServerConfig = { ...config, apiKey: undefined };
  const activity = serverActivity(engine, appConfig);
  const gateway: Gateway = {
    config,
    clientKeys,
    pool,
    limits,
    keyLimits: keyedLimits(clientKeys, limits, defaultLimits),
    defaultLimits,
    metrics,
    app: null as unknown as Gateway['app'],
    healthCheckMs: seconds(env.HEALTH_CHECK_SECONDS, DEFAULT_HEALTH_CHECK_SECONDS) * 1000,
    lastProbe: Date.now(),
    firstProbe: null,
  };
  const routes = fleetRoutes(pool, edgeModel, gateway, async () => `${await activity.metricsText()}${metrics.render()}`);
  gateway.app = createApp({ engine, config: appConfig, guideCompiler: forwardingGuideCompiler, routesBefore: routes, activity });
  return gateway;
}

function tooMany(message: string, retryAfterSeconds: number): Response {
  return errorResponse(new HttpError(429, 'TooManyRequestsError', message, null, { 'retry-after': String(retryAfterSeconds) }));
}

/** Readiness waits for one health check per isolate; later ones run in the background. */
function checkedHealth(gateway: Gateway): Promise<void> {
  gateway.firstProbe ??= gateway.pool.probe().then(() => {
    gateway.lastProbe = Date.now();
  });
  return gateway.firstProbe;
}

/** The routes the fleet answers directly: health from the upstreams, metrics, models merged, OpenAI requests forwarded. */
function fleetRoutes(pool: UpstreamPool, edgeModel: EdgeModel, gateway: Gateway, metricsText: () => Promise<string>): Hono {
  const routes = new Hono();
  // Liveness: this isolate answers. Readiness (/health): some upstream is in rotation.
  routes.get('/health/live', (c) => c.json({ status: 'ok' }));
  routes.get('/health', async (c) => {
    await checkedHealth(gateway);
    const { ready, upstreams } = pool.readiness();
    const up = upstreams.filter((u) => u.up).length;
    if (!ready) {
      return errorResponse(new HttpError(503, 'ServiceUnavailableError', `No upstream is up (0 of ${upstreams.length}); the gateway itself is alive (/health/live).`));
    }
    return c.json({ status: 'ok', upstreams_up: up, upstreams: upstreams.length });
  });
  routes.get('/metrics', async () => new Response(await metricsText(), { headers: { 'content-type': PROMETHEUS_CONTENT_TYPE } }));
  routes.get('/v1/models', async (c) => c.json(await mergedModels(pool)));
  for (const [path, openAIRoute] of Object.entries(OPENAI_ROUTES)) {
    routes.post(path, async (c) =>
      forwardOpenAI(openAIRoute, await readJsonBody(c.req.raw), pool, edgeModel, { signal: c.req.raw.signal, exchange: currentExchange() }),
    );
  }
  return routes;
}

/** Serves one request past the gateway's start; `atEnd` collects what must run once its response body is over. */
async function serve(request: Request, gateway: Gateway, exchange: GatewayExchange, atEnd: Array<() => void>, ctx?: WorkerContext): Promise<Response> {
  // The forwarded OpenAI routes skip the app, so its checks (host, API key as vLLM's
  // --api-key, JSON content type) run here first, before any limit is spent.
  let client: ClientKey | null = null;
  const keys = gateway.clientKeys;
  const checker: ApiKeyChecker | null =
    keys === null
      ? null
      : {
          async matches(token) {
            client = await keys.identify(token);
            return client !== null;
          },
        };
  const refused = await refuseAtFront(request, {
    allowedHosts: gateway.config.allowedHosts,
    apiKeys: checker,
    requireJsonContentType: gateway.config.requireJsonContentType,
    jsonRoutes: FORWARDED_JSON_ROUTES,
  });
  if (refused !== null) return refused;
  exchange.keyName = (client as ClientKey | null)?.name ?? null;
  if (Date.now() - gateway.lastProbe >= gateway.healthCheckMs) {
    gateway.lastProbe = Date.now();
    ctx?.waitUntil(gateway.pool.probe());
  }
  // The app echoes this id and the upstream gets it: one id from client to upstream.
  const headers = new Headers(request.headers);
  headers.set('x-request-id', exchange.id);
  const forwarded = new Request(request, { headers });
  if (request.method !== 'POST') return gateway.app.fetch(forwarded);
  const limits = (exchange.keyName !== null ? gateway.keyLimits.get(exchange.keyName) : undefined) ?? gateway.defaultLimits;
  const key = limitKey(request, exchange.keyName);
  if (limits.rate !== null) {
    const decision = await limits.rate.limit(key);
    if (!decision.allowed) return tooMany('Rate limit exceeded for this API key. Retry later.', decision.retryAfterSeconds);
  }
  if (limits.tokens !== null) {
    const decision = limits.tokens.admit(key);
    if (!decision.allowed) return tooMany('Token limit per minute exceeded for this API key. Retry later.', decision.retryAfterSeconds);
    const budget = limits.tokens;
    atEnd.push(() => budget.spend(key, (exchange.usage.prompt ?? 0) + (exchange.usage.completion ?? 0)));
  }
  if (limits.concurrency !== null) {
    const release = await limits.concurrency.acquire(key, ctx ? (p) => ctx.waitUntil(p) : undefined);
    if (release === null) return tooMany('Too many concurrent requests for this API key. Retry when one has finished.', gateway.limits.concurrencyRetryAfterSeconds);
    atEnd.push(release);
  }
  return gateway.app.fetch(forwarded);
}

/** `response` with the request id, reporting (log, metrics, limits) once its body is over. */
function finished(response: Response, gateway: Gateway | null, request: Request, exchange: GatewayExchange, atEnd: Array<() => void>): Response {
  const report = () => {
    for (const run of atEnd) run();
    gateway?.metrics.answered({
      method: request.method,
      path: new URL(request.url).pathname,
      status: response.status,
      exchange,
      durationMs: Date.now() - exchange.startedAt,
    });
  };
  // An answer made here (a refusal, an error) is reported at once: a client need not read its body.
  const atOnce = response.body === null || exchange.upstream === null || response.status >= 400;
  const body = atOnce || response.body === null ? response.body : onStreamEnd(response.body, report);
  const out = new Response(body, response);
  out.headers.set('x-request-id', exchange.id);
  if (atOnce) report();
  return out;
}

export function createGatewayHandler() {
  const gateways = new WeakMap<object, Promise<Gateway>>();

  function gatewayFor(env: WorkerEnv): Promise<Gateway> {
    let gateway = gateways.get(env);
    if (gateway === undefined) {
      gateway = build(env);
      gateways.set(env, gateway);
    }
    return gateway;
  }

  return {
    async fetch(request: Request, env: WorkerEnv, ctx?: WorkerContext): Promise<Response> {
      const exchange = newExchange(request, Date.now());
      const atEnd: Array<() => void> = [];
      let gateway: Gateway;
      try {
        gateway = await gatewayFor(env);
      } catch (error) {
        // No configuration to check against: a readable key alone guards the reason.
        const key = apiKeyFromEnv(env, WORKER_API_KEY_VARS);
        if (key !== undefined) {
          const refused = await refuseAtFront(request, { allowedHosts: null, apiKeys: apiKeyChecker([key]), requireJsonContentType: false, jsonRoutes: new Set() });
          if (refused !== null) return finished(refused, null, request, exchange, atEnd);
        }
        console.error('The gateway could not start:', error);
        const failed = errorResponse(new HttpError(500, 'InternalServerError', `The gateway could not start: ${(error as Error).message}`));
        return finished(failed, null, request, exchange, atEnd);
      }
      let response: Response;
      try {
        response = await withExchange(exchange, () => serve(request, gateway, exchange, atEnd, ctx));
      } catch (error) {
        for (const run of atEnd) run();
        throw error;
      }
      return finished(response, gateway, request, exchange, atEnd);
    },

    /** Cron Trigger: health-check the fleet (this isolate's view of it). */
    async scheduled(_controller: unknown, env: WorkerEnv, ctx: WorkerContext): Promise<void> {
      ctx.waitUntil(gatewayFor(env).then((gateway) => gateway.pool.probe()));
    },
  };
}

export default createGatewayHandler();
