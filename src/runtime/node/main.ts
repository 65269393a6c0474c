/**
 * The HTTP server under Node, as `edge-llm serve` (src/cli/) and `npm start` run it
 * (compiled to dist/node/server.js and run by plain `node`, scripts/build-server.ts, so
 * signals reach this process). Configuration: defaults < config file (--config, else the
 * path in CONFIG, else ./config.json when present) < environment (HOST, PORT, MODEL_DIR,
 * ..., API_KEY or VLLM_API_KEY) < command-line flags. Media input: ALLOWED_MEDIA_DOMAINS_ENV
 * and MEDIA_* (docs/media.md).
 *
 * Start-up order, so a user can follow it: settings are checked and the model's path is
 * looked at (a typo fails before anything else); the port is bound (a clash fails at once,
 * not after a long load), answering 503 while the model loads; the load prints what it is
 * doing; the last line names the API's and the playground's URLs.
 *
 * On SIGTERM/SIGINT it stops accepting connections, answers new requests on open ones with
 * a 503, and lets running requests finish for shutdownGraceMs; then it cuts the rest (a
 * stream gets an error event, and [DONE] on the OpenAI routes) and exits with code 1.
 */
import { requestBoundsOf } from '../../config/bound-settings.js';
import { budgetRequestBytes } from './bytes-in-flight.js';
import { capPipelinedRequests } from './pipelining.js';
import { noteRequestClient } from '../../http/client-identity.js';
import { readFile, stat } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync } from 'node:fs';
import { join, resolve as resolvePath } from 'node:path';
import { serve } from '@hono/node-server';
import {
  DEFAULT_SERVER_CONFIG,
  describeOrigin,
  resolveServerSettings,
  schedulerLimitsOf,
  settingSurface,
  type ServerConfig,
  type SettingKey,
  type SettingOrigin,
} from '../../config/server-config.js';
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
import { createNodeEmbeddingEngine, isEmbeddingGguf, isEmbeddingModelDir } from './embedding-engine.js';
import { isGgufPath } from '../../gguf/node-gguf.js';
import type { EmbeddingEngine } from '../../embeddings/embedding-engine.js';
import { nodeLoraOptions } from './adapters.js';
import { nodeGuideCompiler } from './guides.js';
import { playgroundRoutes } from './static.js';
import { LiveSseStreams, writingSseDirectly } from './sse.js';
import { capConnections, nodeServerOptions, type ConnectionCap } from './connections.js';
import { answerableAtShutdown, type UnansweredRequests } from './unanswered-requests.js';
import { loadingFetch } from './loading.js';
import { packageRoot } from './package-root.js';
import { downloadProgressPrinter, formatHubModelRef, HubError, hubRefIfNotLocal, hubSettingsFromEnv, resolveHubModel, type HubModelRef } from './hub/index.js';
import { embeddingServingOptions } from '../embedding-options.js';

/** After the grace period, how long cut streams get to send their error event before connections are closed. */
const CUT_FLUSH_MS = 1000;

class StartupError extends Error {}

/** What the command line asks of the server (src/cli/args.ts); everything optional, so `{}` is `npm start` with the environment alone. */
export interface NodeServeRequest {
  /** The MODEL argument: a folder or .gguf file here (a Hugging Face id is resolved to its snapshot folder before). */
  model?: string;
  /** How the model was given, for the report: "MODEL" (the argument) or "--model". */
  modelFlag?: string;
  /** Settings from flags, converted and checked, and the flag each came from. */
  settings?: Record<string, unknown>;
  flagNames?: Record<string, string>;
  /** --config; else CONFIG; else ./config.json when present. */
  configPath?: string;
  /** vLLM's --enable-auto-tool-choice: refused without a tool-call parser, as vLLM does. */
  enableAutoToolChoice?: boolean;
  /** --revision: the branch, tag or commit of a Hugging Face id. */
  revision?: string;
}

/**
 * Fetches a Hugging Face model (or finds it in the cache) and points the settings at it: the
 * snapshot folder, or the .gguf file in it. Unless a name was given, clients name the model
 * as the user did (vLLM serves a Hub model under its id).
 */
async function fetchHubModel(
  ref: HubModelRef,
  config: ServerConfig,
  origins: Partial<Record<SettingKey, SettingOrigin>>,
  revision: string | undefined,
): Promise<ServerConfig> {
  const settings = hubSettingsFromEnv(process.env);
  let resolved;
  try {
    resolved = await resolveHubModel(ref, settings, { dtype: config.dtype, modelFile: config.modelFile, revision, onProgress: downloadProgressPrinter() });
  } catch (error) {
    throw new StartupError(error instanceof HubError ? error.message : `Cannot fetch ${formatHubModelRef(ref)}: ${(error as Error).message}`);
  }
  console.log(`Hub: ${formatHubModelRef(ref)} at commit ${resolved.commit}: ${resolved.path}`);
  return {
    ...config,
    modelDir: resolved.path,
    // The .gguf was picked by the reference; MODEL_FILE names a file inside a folder.
    modelFile: resolved.path.endsWith('.gguf') ? undefined : config.modelFile,
    servedModelName: origins.servedModelName === undefined ? formatHubModelRef(ref) : config.servedModelName,
  };
}

async function readConfigFile(env: NodeJS.ProcessEnv, flagPath: string | undefined): Promise<{ file: unknown; path?: string }> {
  const fromEnv = env.CONFIG !== undefined && env.CONFIG.trim() !== '' ? env.CONFIG.trim() : undefined;
  const explicit = flagPath ?? fromEnv;
  const path = explicit ?? 'config.json';
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if (explicit === undefined && (error as NodeJS.ErrnoException).code === 'ENOENT') return { file: undefined };
    throw new StartupError(`Cannot read the configuration file "${path}": ${(error as Error).message}`);
  }
  try {
    return { file: JSON.parse(text), path };
  } catch (error) {
    throw new StartupError(`The configuration file "${path}" is not valid JSON: ${(error as Error).message}`);
  }
}

/** How the report shows a setting's value (a key only as "set"). */
function shownValue(key: SettingKey, value: unknown): string {
  if (settingSurface(key).secret) return Array.isArray(value) ? `(${value.length} set)` : '(set)';
  if (key === 'loraModules' && Array.isArray(value)) return value.map((m: { name: string; path: string }) => `${m.name}=${m.path}`).join(',');
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** One line per setting not at its default: its value and where it came from (flag, env, file). */
export function settingsReport(config: ServerConfig, origins: Partial<Record<SettingKey, SettingOrigin>>): string[] {
  const lines: string[] = [];
  for (const [key, origin] of Object.entries(origins) as Array<[SettingKey, SettingOrigin]>) {
    const value = (config as Record<string, unknown>)[key];
    if (JSON.stringify(value) === JSON.stringify((DEFAULT_SERVER_CONFIG as Record<string, unknown>)[key]) && key !== 'modelDir') continue;
    lines.push(`  ${key} = ${shownValue(key, value)}  (${describeOrigin(origin)})`);
  }
  return lines.length === 0 ? [] : ['Settings other than the defaults:', ...lines];
}

/**
 * vLLM's --chat-template: a file when one exists at that path, else the template itself when
 * it looks like Jinja; anything else is a path that is not there.
 */
async function chatTemplateText(value: string): Promise<string> {
  try {
    return await readFile(value, 'utf8');
  } catch (error) {
    if (/[{][{%]/.test(value)) return value;
    throw new StartupError(`The chat template "${value}" cannot be read: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file (and it is not a Jinja template)' : (error as Error).message}.`);
  }
}

/** The default model folder: relative to the package root (the folder a clone or an install holds), unless the working directory has it. */
function embeddedModelDir(defaultDir: string): string {
  if (existsSync(defaultDir)) return defaultDir;
  return join(packageRoot(import.meta.url), defaultDir);
}

/** Refuses a model path that is not there, before the port is bound: a typo should not look like a load failure. */
async function checkModelPath(modelDir: string): Promise<void> {
  try {
    await stat(modelDir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') return;
    throw new StartupError(`The model "${modelDir}" does not exist: no such folder or file (${resolvePath(modelDir)}).`);
  }
}

/** A start-up error message on one line, without the media module's own "media config:" prefix. */
function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').replace(/^media config: /, '').trim();
}

/** A fetch as @hono/node-server calls it (env: its bindings, `outgoing` among them; `any` as in its own type). */
type NodeFetch = (request: Request, env: any) => Response | Promise<Response>;

/** Binds the port now; requests go to whatever `handler.current` is (the loading answer, then the app). */
/** A bound server, with what its shutdown needs of the layers around the app. */
interface Listening {
  server: Server;
  url: string;
  connections: ConnectionCap;
  unanswered: UnansweredRequests<NodeFetch>;
}

function listen(config: ServerConfig, handler: { current: NodeFetch }, streams: LiveSseStreams): Promise<Listening> {
  return new Promise((resolve, reject) => {
    const serverOptions = nodeServerOptions(config);
    const fetch: NodeFetch = (request, env) => {
      // The connection's peer: who the request counts against where clients take turns (http/client-identity.ts).
      noteRequestClient(request, env?.incoming?.socket?.remoteAddress);
      return handler.current(request, env);
    };
    // Without createServer, @hono/node-server makes a node:http server.
    // Request bodies in flight share one budget, at least one largest body (bytes-in-flight.ts).
    const maxRequestBytes = requestBoundsOf(config).maxRequestBytes;
    // Inside the SSE writer: a request answered at the grace deadline is written as any other response.
    const unanswered = answerableAtShutdown(fetch);
    const budgeted = budgetRequestBytes(
      writingSseDirectly(unanswered.fetch, { writeTimeoutMs: config.streamWriteTimeoutMs, streams }),
      Math.max(config.maxRequestBytesInFlight, maxRequestBytes),
      maxRequestBytes,
    );
    let connections: ConnectionCap | undefined;
    const server = serve({ fetch: budgeted.fetch, hostname: config.host, port: config.port, serverOptions }, (info: AddressInfo) => {
      server.off('error', reject);
      const host = info.family === 'IPv6' ? `[${info.address}]` : info.address;
      resolve({ server, url: `http://${host}:${info.port}`, connections: connections!, unanswered });
    }) as Server;
    // Past the cap the oldest idle connection makes room; a new one is dropped only when all are busy.
    connections = capConnections(server, config);
    capPipelinedRequests(server, config.maxPipelinedRequests);
    server.once('error', (error) => {
      const code = (error as NodeJS.ErrnoException).code;
      const why = code === 'EADDRINUSE' ? `the port is in use by another program (choose another with --port)` : (error as Error).message;
      reject(new StartupError(`Cannot listen on ${config.host}:${config.port}: ${why}`));
    });
  });
}

/**
 * `stopThreads` ends the work threads hold for requests (chat template renderings) with the
 * given error: at the grace deadline, so a request whose rendering still runs gets the same
 * 503 as a cut generation, and no thread outlives the server. `streams` are the SSE streams
 * being written: ended whole at the same moment (sse.ts).
 */
function installShutdown(
  { server, connections, unanswered }: Listening,
  engine: Engine,
  activity: ServerActivity,
  graceMs: number,
  stopThreads: (error: () => unknown) => Promise<void>,
  streams: LiveSseStreams,
): void {
  let stopping = false;
  let cut = 0;
  const exit = async () => {
    await stopThreads(() => new HttpError(503, 'ServiceUnavailableError', 'The server is shutting down.')).catch(() => {});
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
    console.log(`${signal} received: new requests get a 503; finishing ${activity.openRequests} in-flight requests (up to ${graceMs} ms)...`);
    // Exits once the listener and every connection are closed: requests done, their responses flushed.
    server.once('close', () => void exit());
    // Connections the kernel holds are still taken (and get a 503) before the listener closes;
    // keep-alive connections close when their response ends, not at their keep-alive timeout.
    connections.drain();
    setTimeout(() => {
      connections.stopAccepting();
      if (activity.openRequests === 0) return;
      cut = activity.openRequests;
      const cutError = new HttpError(503, 'ServiceUnavailableError', `The server is shutting down: the request was cut after the ${graceMs} ms grace period.`);
      const generating = activity.cutGenerations(cutError);
      void stopThreads(() => cutError);
      // Whatever else still has no answer (a body being read, a queue elsewhere) gets the same one now.
      unanswered.answerAll(cutError);
      // Streams whose clients read slowly (or not at all) write their error event now, whole,
      // without waiting for the socket to take what came before it.
      streams.endAll(cutError);
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
  if (isGgufPath(config.modelFile) && !isGgufPath(config.modelDir) && config.runner === 'pooling') {
    throw new StartupError('runner "pooling": a GGUF embedding model is served by naming the file itself (MODEL_DIR=path/to/file.gguf), not as MODEL_FILE in a folder.');
  }
  if (config.runner !== 'auto') return config.runner === 'pooling';
  // A GGUF whose header sets a pooling type is llama.cpp's --embedding file (an encoder one is then refused with the reason).
  if (isGgufPath(config.modelDir)) return isEmbeddingGguf(config.modelDir);
  return !isGgufPath(config.modelFile) && (await isEmbeddingModelDir(config.modelDir));
}

/** Resolves the settings (flags > environment > config file > defaults), binds the port, loads the model and serves it. */
export async function serveOnNode(request: NodeServeRequest = {}): Promise<void> {
  let config: ServerConfig;
  let origins: Partial<Record<SettingKey, SettingOrigin>>;
  try {
    const { file, path } = await readConfigFile(process.env, request.configPath);
    const flags = { ...request.settings };
    const flagNames = { ...request.flagNames };
    if (request.model !== undefined) {
      flags.modelDir = request.model;
      flagNames.modelDir = request.modelFlag ?? 'MODEL argument';
    }
    ({ config, origins } = resolveServerSettings({ file, filePath: path, env: process.env, flags, flagNames }));
    // No model named: the embedded one, from this package wherever it is installed (not the working directory).
    if (origins.modelDir === undefined) config = { ...config, modelDir: embeddedModelDir(config.modelDir) };
  } catch (error) {
    throw error instanceof StartupError ? error : new StartupError((error as Error).message);
  }
  if (config.chatTemplate !== undefined) config = { ...config, chatTemplate: await chatTemplateText(config.chatTemplate) };
  if (request.enableAutoToolChoice && config.toolCallParser === undefined) {
    throw new StartupError('--enable-auto-tool-choice needs --tool-call-parser (the format the model writes its calls in), as in vLLM.');
  }
  if (!isEngineWorker()) for (const line of settingsReport(config, origins)) console.log(line);
  const hubRef = await hubRefIfNotLocal(config.modelDir);
  if (hubRef === null) await checkModelPath(config.modelDir);
  // Offline the cache answers at once; data-parallel processes share one download, made before they start.
  let fetchAfterBinding = hubRef !== null;
  if (hubRef !== null && (hubSettingsFromEnv(process.env).offline || config.dataParallelSize > 1)) {
    config = await fetchHubModel(hubRef, config, origins, request.revision);
    fetchAfterBinding = false;
    // The engine processes find it in the cache, without asking the Hub again.
    if (config.dataParallelSize > 1) process.env.HF_HUB_OFFLINE = '1';
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

  // The port first: a clash is refused now, not after the load; until the model is ready
  // every request gets a 503 saying so (GET /health: 503, as vLLM's when not ready).
  const loading = { stage: 'starting', model: config.modelDir };
  const handler: { current: NodeFetch } = { current: loadingFetch(loading) };
  // The streams being written, ended whole at shutdown (sse.ts).
  const streams = new LiveSseStreams();
  const listening = await listen(config, handler, streams);
  const { server, url } = listening;
  console.log(`Bound ${url}: loading the model "${config.modelDir}" (requests get a 503 until it is ready)`);
  const loadStarted = performance.now();
  const progress = (stage: string) => {
    loading.stage = stage;
    console.log(`Loading: ${stage} (${((performance.now() - loadStarted) / 1000).toFixed(1)} s)`);
  };
  if (fetchAfterBinding && hubRef !== null) {
    loading.stage = `fetching ${formatHubModelRef(hubRef)} from the Hugging Face Hub`;
    try {
      config = await fetchHubModel(hubRef, config, origins, request.revision);
    } catch (error) {
      server.close();
      throw error;
    }
  }

  let engine: LocalEngine | EmbeddingEngine;
  let embeddings: EmbeddingEngine | null = null;
  try {
    if (await servesEmbeddings(config)) {
      embeddings = await createNodeEmbeddingEngine({
        ...embeddingServingOptions(config),
        modelDir: config.modelDir,
        dtype: config.dtype,
        modelFile: config.modelFile,
        intraOpNumThreads: config.intraOpNumThreads === 'auto' ? Math.max(1, Math.floor(availableParallelism() / config.dataParallelSize)) : config.intraOpNumThreads,
      });
      engine = embeddings;
      progress('ready');
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
        intraOpSpinning: config.intraOpSpinning,
        modelThread: config.modelThread,
        processes: config.dataParallelSize,
        tokenizerThread: { maxQueued: config.maxThreadQueue, maxQueuedPerClient: config.maxThreadQueuePerClient, timeoutMs: config.maxTokenizationMs },
        onProgress: progress,
      });
      engine = local;
      progress('ready');
      // The model was run once already (the batching self-test is its warm-up pass).
      const report = formatLoadReport(local.loadReport);
      for (const line of report.info) console.log(line);
      for (const line of report.warnings) console.warn(`Warning: ${line}`);
    }
  } catch (error) {
    server.close();
    throw error instanceof StartupError ? error : new StartupError((error as Error).message);
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
  const templateThread = createNodeTemplateThread({ size: config.templateThreads, maxQueued: config.maxThreadQueue, maxQueuedPerClient: config.maxThreadQueuePerClient });
  try {
    app = createApp({
      engine,
      config,
      mediaFetcher: createNodeMediaFetcher(mediaConfig, {}, { maxQueued: config.maxThreadQueue, maxQueuedPerClient: config.maxThreadQueuePerClient }),
      embeddings,
      guideCompiler:
        embeddings === null
          ? nodeGuideCompiler(engine, {
              maxQueued: config.maxGuidedCompileQueue,
              maxQueuedPerClient: config.maxGuidedCompileQueuePerClient,
              deadlineMs: config.guidedCompileDeadlineMs,
            }, config.guidedDecodingThreads)
          : null,
      templateThread,
      activity,
    });
    // The playground page at / and its assets; API routes keep priority.
    app.route('/', playgroundRoutes({ modelDir: config.modelDir }));
  } catch (error) {
    server.close();
    throw new StartupError((error as Error).message);
  }
  handler.current = app.fetch as NodeFetch;
  installShutdown(listening, engine, activity, config.shutdownGraceMs, (error) => templateThread.close(error), streams);
  console.log(`Serving model "${engine.info.id}" from ${config.modelDir}`);
  if (embeddings === null) for (const line of (engine as LocalEngine).adapters?.startupLines() ?? []) console.log(line);
  // The last line: where to go next.
  console.log(`Listening on ${url} (API ${url}/v1, playground ${url}/)`);
}

/** `edge-llm pull MODEL`: fetches a Hugging Face model into the cache, prints where, and stops. */
export async function pullOnNode(request: NodeServeRequest): Promise<void> {
  const ref = request.model === undefined ? null : (await hubRefIfNotLocal(request.model)) ?? null;
  if (ref === null) throw new StartupError(`"${request.model}" is not a Hugging Face id (owner/repo, owner/repo:QUANT, owner/repo/file.gguf), or it is a path here.`);
  let resolved;
  try {
    resolved = resolveServerSettings({ env: process.env, flags: { ...request.settings }, flagNames: request.flagNames });
  } catch (error) {
    throw new StartupError((error as Error).message);
  }
  const { config, origins } = resolved;
  const fetched = await fetchHubModel(ref, config, origins, request.revision);
  console.log(fetched.modelDir);
}

/** Runs a command (serve, pull) as a process's main: a start-up failure is one message and exit code 1. */
export function runNodeCommand(command: (request: NodeServeRequest) => Promise<void>, request: NodeServeRequest): void {
  command(request).catch((error: unknown) => {
    if (error instanceof StartupError) console.error(error.message);
    else console.error('Startup failed:', error);
    process.exit(1);
  });
}

/** Runs serveOnNode as a process's main: a start-up failure is one message and exit code 1. */
export function runNodeServer(request: NodeServeRequest = {}): void {
  serveOnNode(request).catch((error: unknown) => {
    if (error instanceof StartupError) console.error(error.message);
    else console.error('Startup failed:', error);
    process.exit(1);
  });
}
