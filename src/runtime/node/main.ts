/**
 * `npm start`: the HTTP server under Node, compiled to dist/node/server.js and run by plain
 * `node` (scripts/build-server.ts), so signals reach this process. Configuration: defaults
 * < config file (the path in CONFIG, else ./config.json when present) < environment (HOST,
 * PORT, MODEL_DIR, SERVED_MODEL_NAME, DATA_PARALLEL_SIZE, ALLOWED_HOSTS, API_KEY or
 * VLLM_API_KEY). Media input: ALLOWED_MEDIA_DOMAINS_ENV and MEDIA_* (docs/media.md).
 *
 * On SIGTERM/SIGINT it stops accepting connections, answers new requests on open ones with
 * a 503, and lets running requests finish for shutdownGraceMs; then it cuts the rest (a
 * stream gets an error event, and [DONE] on the OpenAI routes) and exits with code 1.
 */
import { readFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { resolveServerConfig, schedulerLimitsOf, type ServerConfig } from '../../config/server-config.js';
import type { LocalEngine } from '../../engine/local-engine.js';
import { formatLoadReport } from '../../engine/loading/load-report.js';
import type { Engine } from '../../engine/types.js';
import { createApp, serverActivity } from '../../http/app.js';
import { createNodeTemplateThread } from '../../tokenizer/node-template-thread.js';
import { HttpError } from '../../http/errors.js';
import type { ServerActivity } from '../../http/observability/activity.js';
import type { RegistrySnapshot } from '../../http/observability/prometheus.js';
import { defaultAllowedHosts } from '../../http/security/allowed-hosts.js';
import { mediaConfigFromEnv, type MediaConfig } from '../../media/index.js';
import { checkMediaDiskSpace, createNodeMediaFetcher } from '../../media/node.js';
import { isEngineWorker, shareMetricsWithPeers, SHUTDOWN_MESSAGE, startEngineProcesses } from './cluster.js';
import { createNodeEngine } from './engine.js';
import { createNodeEmbeddingEngine, isEmbeddingModelDir } from './embedding-engine.js';
import type { EmbeddingEngine } from '../../embeddings/embedding-engine.js';
import { isGgufPath } from '../../gguf/node-gguf.js';
import { nodeLoraOptions } from './adapters.js';
import { nodeGuideCompiler } from './guides.js';
import { playgroundRoutes } from './static.js';
import { writingSseDirectly } from './sse.js';
import { capConnections, nodeServerOptions } from './connections.js';

/** After the grace period, how long cut streams get to send their error event before connections are closed. */
const CUT_FLUSH_MS = 1000;

class StartupError extends Error {}

async function readConfigFile(env: NodeJS.ProcessEnv): Promise<unknown> {
  const explicit = env.CONFIG !== undefined && env.CONFIG.trim() !== '';
  const path = explicit ? env.CONFIG!.trim() : 'config.json';
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if (!explicit && (error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new StartupError(`Cannot read the configuration file "${path}": ${(error as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new StartupError(`The configuration file "${path}" is not valid JSON: ${(error as Error).message}`);
  }
}

/** A start-up error message on one line, without the media module's own "media config:" prefix. */
function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').replace(/^media config: /, '').trim();
}

function listen(app: ReturnType<typeof createApp>, config: ServerConfig): Promise<{ server: Server; url: string }> {
  return new Promise((resolve, reject) => {
    const serverOptions = nodeServerOptions(config);
    // Without createServer, @hono/node-server makes a node:http server.
    const server = serve({ fetch: writingSseDirectly(app.fetch), hostname: config.host, port: config.port, serverOptions }, (info: AddressInfo) => {
      server.off('error', reject);
      const host = info.family === 'IPv6' ? `[${info.address}]` : info.address;
      resolve({ server, url: `http://${host}:${info.port}` });
    }) as Server;
    // Past the cap the oldest idle connection makes room; a new one is dropped only when all are busy.
    capConnections(server, config);
    server.once('error', (error) =>
      reject(new StartupError(`Cannot listen on ${config.host}:${config.port}: ${(error as Error).message}`)),
    );
  });
}

function installShutdown(server: Server, engine: Engine, activity: ServerActivity, graceMs: number): void {
  let stopping = false;
  let cut = 0;
  const exit = async () => {
    await engine.dispose().catch(() => {});
    console.log(cut > 0 ? `Server stopped; ${cut} requests were cut.` : 'Server stopped.');
    process.exit(cut > 0 ? 1 : 0);
  };
  const shutdown = (signal: string) => {
    // In a data-parallel server a terminal's Ctrl-C reaches every process as well as the
    // primary's relayed request: only a repeated signal forces the exit.
    if (stopping && signal === 'shutdown request') return;
    if (stopping) {
      console.log(`${signal} again: exiting now.`);
      process.exit(1);
    }
    stopping = true;
    activity.draining = true;
    console.log(`${signal} received: no new connections; finishing ${activity.openRequests} in-flight requests (up to ${graceMs} ms)...`);
    // Exits once every connection is closed: requests done, their responses flushed.
    server.close(() => void exit());
    // A keep-alive connection goes idle when its response ends; close it then, not at its keep-alive timeout.
    server.closeIdleConnections();
    setInterval(() => server.closeIdleConnections(), 100).unref();
    setTimeout(() => {
      if (activity.openRequests === 0) return;
      cut = activity.openRequests;
      const generating = activity.cutGenerations(
        new HttpError(503, 'ServiceUnavailableError', `The server is shutting down: the request was cut after the ${graceMs} ms grace period.`),
      );
      console.log(`Grace period over: cutting ${cut} requests (${generating} generating).`);
      // The cut streams send their error event (and [DONE]) as the engine stops them; then whatever is left is closed.
      setTimeout(() => server.closeAllConnections(), CUT_FLUSH_MS).unref();
    }, graceMs).unref();
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('message', (message) => {
    if (message === SHUTDOWN_MESSAGE) shutdown('shutdown request');
  });
}

/**
 * vLLM's --runner: "pooling" serves the folder as an embedding model, "generate" as a
 * generation model, "auto" decides from the folder (runtime/node/embedding-engine.ts).
 */
async function servesEmbeddings(config: ServerConfig): Promise<boolean> {
  const gguf = isGgufPath(config.modelDir) || isGgufPath(config.modelFile);
  if (config.runner === 'pooling' && gguf) {
    throw new StartupError('runner "pooling": GGUF embedding models are not served yet; serve the model\'s ONNX export (feature-extraction) instead.');
  }
  if (config.runner !== 'auto') return config.runner === 'pooling';
  return !gguf && (await isEmbeddingModelDir(config.modelDir));
}

async function main(): Promise<void> {
  let config: ServerConfig;
  try {
    config = resolveServerConfig({ file: await readConfigFile(process.env), env: process.env });
  } catch (error) {
    throw error instanceof StartupError ? error : new StartupError((error as Error).message);
  }
  if (config.headersTimeoutMs > config.requestTimeoutMs) {
    throw new StartupError(
      `Invalid server configuration: headersTimeoutMs (${config.headersTimeoutMs}) must not exceed requestTimeoutMs (${config.requestTimeoutMs}).`,
    );
  }
  let mediaConfig: MediaConfig;
  try {
    mediaConfig = mediaConfigFromEnv(process.env);
  } catch (error) {
    throw new StartupError(`Invalid media configuration: ${oneLine((error as Error).message)}`);
  }
  // Each engine process has its own adapters: a load request would reach only one of them.
  if (config.dataParallelSize > 1 && config.allowRuntimeLoraUpdating) {
    throw new StartupError('allowRuntimeLoraUpdating cannot be combined with dataParallelSize > 1: a load or unload would reach only one engine process. Load adapters at startup with loraModules instead.');
  }
  if (config.dataParallelSize > 1 && !isEngineWorker()) {
    console.log(`Data parallel: starting ${config.dataParallelSize} engine processes on one port`);
    startEngineProcesses(config.dataParallelSize, config.shutdownGraceMs + CUT_FLUSH_MS + 4000);
    return;
  }
  // The spec's reserve is for downloaded media, so it only matters once remote media is
  // allowed. A warning, not a failure: media is held in memory, and the reserve is a worst case.
  if (mediaConfig.allowedDomains.length > 0) {
    const diskWarning = await checkMediaDiskSpace(
      mediaConfig.mediaDir,
      config.maxRunningSequences + config.maxWaitingRequests,
      mediaConfig.maxBytes,
    ).catch((error: unknown) => `media: cannot measure the free space of ${mediaConfig.mediaDir}: ${(error as Error).message}`);
    if (diskWarning !== null) console.warn(`Warning: ${diskWarning}`);
  }

  let engine: LocalEngine | EmbeddingEngine;
  let embeddings: EmbeddingEngine | null = null;
  try {
    if (await servesEmbeddings(config)) {
      embeddings = await createNodeEmbeddingEngine({
        modelDir: config.modelDir,
        servedModelName: config.servedModelName,
        dtype: config.dtype,
        modelFile: config.modelFile,
        limits: schedulerLimitsOf(config),
        maxSeqLen: config.maxSeqLen,
        poolerOverride: config.poolerConfig === undefined ? undefined : { poolingType: config.poolerConfig.pooling_type, normalize: config.poolerConfig.normalize },
        intraOpNumThreads: config.intraOpNumThreads === 'auto' ? Math.max(1, Math.floor(availableParallelism() / config.dataParallelSize)) : config.intraOpNumThreads,
      });
      engine = embeddings;
      for (const line of embeddings.notes) console.log(line);
    } else {
      const local = await createNodeEngine({
        modelDir: config.modelDir,
        servedModelName: config.servedModelName,
        limits: schedulerLimitsOf(config),
        dtype: config.dtype,
        modelFile: config.modelFile,
        lora: nodeLoraOptions(config),
        intraOpNumThreads: config.intraOpNumThreads,
        modelThread: config.modelThread,
        processes: config.dataParallelSize,
        tokenizerThread: true,
      });
      engine = local;
      // The model was run once already (the batching self-test is its warm-up pass).
      const report = formatLoadReport(local.loadReport);
      for (const line of report.info) console.log(line);
      for (const line of report.warnings) console.warn(`Warning: ${line}`);
    }
  } catch (error) {
    throw new StartupError((error as Error).message);
  }

  // XGrammar (its WebAssembly and the vocabulary prepared for it, ~20 MiB here) starts with
  // the first structured-output request, which pays its start-up once (nodeGuideCompiler):
  // a server that never gets one never holds it.

  // Not set: loopback names only on a loopback address (allowed-hosts.ts), no check otherwise.
  if (config.allowedHosts === null) config = { ...config, allowedHosts: defaultAllowedHosts(config.host) };
  if (config.apiKey === undefined && defaultAllowedHosts(config.host) === null) {
    console.warn(`Warning: listening on ${config.host} without an API key: anyone who can reach this address can use it (set API_KEY).`);
  }
  const activity = serverActivity(engine, config, (line) => console.log(line));
  if (isEngineWorker()) {
    const peers = shareMetricsWithPeers(() => activity.metrics.snapshot());
    activity.peerMetrics = () => peers() as Promise<RegistrySnapshot[]>;
  }
  let app: ReturnType<typeof createApp>;
  try {
    app = createApp({
      engine,
      config,
      mediaFetcher: createNodeMediaFetcher(mediaConfig),
      embeddings,
      guideCompiler: embeddings === null ? nodeGuideCompiler(engine) : null,
      templateThread: createNodeTemplateThread(),
      activity,
    });
    // The playground page at / and its assets; API routes keep priority.
    app.route('/', playgroundRoutes({ modelDir: config.modelDir }));
  } catch (error) {
    throw new StartupError((error as Error).message);
  }
  const { server, url } = await listen(app, config);
  installShutdown(server, engine, activity, config.shutdownGraceMs);
  console.log(`Serving model "${engine.info.id}" from ${config.modelDir}`);
  if (embeddings === null) for (const line of (engine as LocalEngine).adapters?.startupLines() ?? []) console.log(line);
  console.log(`Listening on ${url}`);
}

main().catch((error: unknown) => {
  if (error instanceof StartupError) console.error(error.message);
  else console.error('Startup failed:', error);
  process.exit(1);
});
