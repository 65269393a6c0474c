/**
 * The Worker's fetch handler around the shared Hono app: it builds the engine and the
 * app on the first request of an isolate (a Worker has no start-up hook, and the model
 * should load once, not per request), then hands every request to the same app `npm
 * start` serves under Node, API key check, metrics and request log included (per isolate).
 */
import type { ServerConfig } from '../../config/server-config.js';
import type { EmbeddingService } from '../../embeddings/types.js';
import type { Engine } from '../../engine/types.js';
import { createApp, serverActivity } from '../../http/app.js';
import { errorResponse, HttpError } from '../../http/errors.js';
import type { GuideCompiler } from '../../http/guided-decoding.js';
import { apiKeyChecker } from '../../http/security/api-key.js';
import { refuseUnauthorized } from '../../http/security/middleware.js';
import { apiKeyFromEnv } from '../../config/server-config.js';
import { serverConfigFromEnv, WORKER_API_KEY_VARS, type WorkerEnv } from './env.js';
import { untilEngineIdle } from './keepalive.js';

export interface WorkerEngine {
  engine: Engine;
  /**
   * True when one step loop serves every request (LocalEngine), so the request that
   * started it must outlive its response until the engine is idle (worker-keepalive.ts).
   * False when each request's generation runs on its own (RemoteEngine).
   */
  sharedStepLoop: boolean;
  /** Compiles structured-output constraints for `engine`; without one, guided requests get a 400. */
  guideCompiler?: GuideCompiler;
  /** The embedding model `engine` is (an EmbeddingEngine is both): /v1/embeddings serves it, generation routes refuse. */
  embeddings?: EmbeddingService | null;
}

export type EngineFactory = (env: WorkerEnv, config: ServerConfig) => Promise<WorkerEngine>;

/** The part of workerd's ExecutionContext the handler uses. */
export interface WorkerContext {
  waitUntil(promise: Promise<unknown>): void;
}

export interface WorkerHandler {
  fetch(request: Request, env: WorkerEnv, ctx?: WorkerContext): Promise<Response>;
}

interface Served extends WorkerEngine {
  app: { fetch(request: Request): Response | Promise<Response> };
}

/**
 * `modelDir` only names the embedded model: its base name is the default served model
 * name, as under Node. workerd hands the same `env` object to every request of an
 * isolate, so the app is kept per `env` (tests pass several).
 */
export function createWorkerHandler(createEngine: EngineFactory, modelDir: string): WorkerHandler {
  const served = new WeakMap<object, Promise<Served>>();

  async function build(env: WorkerEnv): Promise<Served> {
    const config = serverConfigFromEnv(env, modelDir);
    const built = await createEngine(env, config);
    // Request log lines go to the Worker's logs (wrangler tail, Workers Logs).
    const activity = serverActivity(built.engine, config, (line) => console.log(line));
    return { ...built, app: createApp({ engine: built.engine, embeddings: built.embeddings ?? null, config, guideCompiler: built.guideCompiler, activity }) };
  }

  return {
    async fetch(request, env, ctx) {
      let app = served.get(env);
      if (app === undefined) {
        app = build(env);
        served.set(env, app);
        // A failed start (bad vars, model that does not load) is retried by the next request.
        app.catch(() => served.delete(env));
      }
      let ready: Served;
      try {
        ready = await app;
      } catch (error) {
        // The app that checks the key did not start: before saying why, check it here, on every path.
        const key = apiKeyFromEnv(env, WORKER_API_KEY_VARS);
        if (key !== undefined) {
          const refused = await refuseUnauthorized(request, apiKeyChecker([key]));
          if (refused !== null) return refused;
        }
        console.error('The server could not start:', error);
        return errorResponse(new HttpError(500, 'InternalServerError', `The server could not start: ${(error as Error).message}`));
      }
      // Before the app runs: while this request waits for steps run by another request's
      // loop, its own context needs pending work or workerd cancels it as hung.
      if (ready.sharedStepLoop) ctx?.waitUntil(untilEngineIdle(ready.engine));
      return ready.app.fetch(request);
    },
  };
}
