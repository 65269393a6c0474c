/**
 * The embedding API for Node (`import { ... } from 'edge-llm'`): build the engine on a model
 * folder or .gguf file, and the Hono app on it, then serve the app with any Node adapter or
 * mount it in an app of one's own. `serveOnNode` is `edge-llm serve` itself.
 *
 *   import { createApp, createNodeEngine, parseServerConfig } from 'edge-llm';
 *   const config = parseServerConfig({ maxIterTimes: 64 });
 *   const engine = await createNodeEngine({ modelDir: embeddedModelDir() });
 *   const app = createApp({ engine, config });          // a Hono app: app.fetch(request)
 */
import { join } from 'node:path';
import { packageRoot } from './package-root.js';

export { createApp, serverActivity, type AppDeps } from '../../http/app.js';
export { parseServerConfig, resolveServerConfig, DEFAULT_SERVER_CONFIG, type ServerConfig } from '../../config/server-config.js';
export { createNodeEngine, type NodeEngineOptions } from './engine.js';
export { serveOnNode, type NodeServeRequest } from './main.js';
export { nodeGuideCompiler } from './guides.js';
export { playgroundRoutes } from './static.js';
export { resolveHubModel, hubSettingsFromEnv, parseHubModelRef } from './hub/index.js';
export { VERSION } from '../../common/version.js';

/** The folder of the model this package embeds (Karpathy's TinyStories 260K). */
export function embeddedModelDir(): string {
  return join(packageRoot(import.meta.url), 'models', 'stories260k');
}
