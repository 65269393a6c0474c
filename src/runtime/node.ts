/**
 * `npm start`: the HTTP server under Node. Configuration: defaults < config file (the
 * path in CONFIG, else ./config.json when present) < environment (HOST, PORT,
 * MODEL_DIR, SERVED_MODEL_NAME). Media input: ALLOWED_MEDIA_DOMAINS_ENV and MEDIA_*
 * (docs/media.md).
 */
import { readFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { resolveServerConfig, schedulerLimitsOf, type ServerConfig } from '../config/server-config.js';
import type { LocalEngine } from '../engine/local-engine.js';
import { formatLoadReport } from '../engine/load-report.js';
import type { Engine } from '../engine/types.js';
import { createApp } from '../http/app.js';
import { mediaConfigFromEnv, type MediaConfig } from '../media/index.js';
import { checkMediaDiskSpace, createNodeMediaFetcher } from '../media/node.js';
import { isEngineWorker, SHUTDOWN_MESSAGE, startEngineProcesses } from './node-cluster.js';
import { createNodeEngine } from './node-engine.js';
import { nodeLoraOptions } from './node-adapters.js';
import { nodeGuideCompiler, warmUpNodeGuides } from './node-guides.js';
import { playgroundRoutes } from './node-static.js';

/** How long in-flight requests get to finish on SIGINT/SIGTERM before the process exits anyway. */
const SHUTDOWN_GRACE_MS = 5000;

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

function listen(app: ReturnType<typeof createApp>, config: ServerConfig): Promise<{ server: ServerType; url: string }> {
  return new Promise((resolve, reject) => {
    const server = serve({ fetch: app.fetch, hostname: config.host, port: config.port }, (info: AddressInfo) => {
      server.off('error', reject);
      const host = info.family === 'IPv6' ? `[${info.address}]` : info.address;
      resolve({ server, url: `http://${host}:${info.port}` });
    });
    server.once('error', (error) =>
      reject(new StartupError(`Cannot listen on ${config.host}:${config.port}: ${(error as Error).message}`)),
    );
  });
}

function installShutdown(server: ServerType, engine: Engine): void {
  let stopping = false;
  const shutdown = (signal: string) => {
    // In a data-parallel server a terminal's Ctrl-C reaches every process as well as the
    // primary's relayed request: only a repeated signal forces the exit.
    if (stopping && signal === 'shutdown request') return;
    if (stopping) {
      console.log(`${signal} again: exiting now.`);
      process.exit(1);
    }
    stopping = true;
    console.log(`${signal} received: no new connections; finishing in-flight requests...`);
    const forceExit = setTimeout(() => {
      console.log(`Requests still running after ${SHUTDOWN_GRACE_MS} ms: exiting.`);
      process.exit(0);
    }, SHUTDOWN_GRACE_MS);
    forceExit.unref();
    server.close(async () => {
      await engine.dispose();
      console.log('Server stopped.');
      process.exit(0);
    });
    // Keep-alive connections with no request in flight would otherwise hold close() open.
    if ('closeIdleConnections' in server) server.closeIdleConnections();
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('message', (message) => {
    if (message === SHUTDOWN_MESSAGE) shutdown('shutdown request');
  });
}

async function main(): Promise<void> {
  let config: ServerConfig;
  try {
    config = resolveServerConfig({ file: await readConfigFile(process.env), env: process.env });
  } catch (error) {
    throw error instanceof StartupError ? error : new StartupError((error as Error).message);
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
    startEngineProcesses(config.dataParallelSize);
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

  let engine: LocalEngine;
  try {
    engine = await createNodeEngine({
      modelDir: config.modelDir,
      servedModelName: config.servedModelName,
      limits: schedulerLimitsOf(config),
      dtype: config.dtype,
      modelFile: config.modelFile,
      lora: nodeLoraOptions(config),
    });
  } catch (error) {
    throw new StartupError((error as Error).message);
  }
  // The model was run once already (the batching self-test is its warm-up pass).
  const report = formatLoadReport(engine.loadReport);
  for (const line of report.info) console.log(line);
  for (const line of report.warnings) console.warn(`Warning: ${line}`);

  // Before listening, so the first structured-output request does not pay for it. Plain
  // generation does not need XGrammar: a failure here only leaves guided requests to retry it.
  await warmUpNodeGuides(engine).catch((error: unknown) =>
    console.warn(`Warning: structured output could not be prepared (guided requests will retry): ${(error as Error).message}`),
  );

  let app: ReturnType<typeof createApp>;
  try {
    app = createApp({ engine, config, mediaFetcher: createNodeMediaFetcher(mediaConfig), guideCompiler: nodeGuideCompiler(engine) });
    // The playground page at / and its assets; API routes keep priority.
    app.route('/', playgroundRoutes({ modelDir: config.modelDir }));
  } catch (error) {
    throw new StartupError((error as Error).message);
  }
  const { server, url } = await listen(app, config);
  installShutdown(server, engine);
  console.log(`Serving model "${engine.info.id}" from ${config.modelDir}`);
  for (const line of engine.adapters?.startupLines() ?? []) console.log(line);
  console.log(`Listening on ${url}`);
}

main().catch((error: unknown) => {
  if (error instanceof StartupError) console.error(error.message);
  else console.error('Startup failed:', error);
  process.exit(1);
});
