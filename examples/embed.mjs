// Embedding edge-llm in a Node program: the engine on the embedded model, the Hono app on it,
// one request through app.fetch (mount the app in your own server, or serve it with
// @hono/node-server). Run from a folder where edge-llm is installed: node embed.mjs
import { createApp, createNodeEngine, embeddedModelDir, parseServerConfig } from 'edge-llm';

const config = parseServerConfig({ maxIterTimes: 64 });
const engine = await createNodeEngine({ modelDir: embeddedModelDir() });
const app = createApp({ engine, config });

const response = await app.fetch(
  new Request('http://localhost/v1/completions', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'stories260k', prompt: 'Once upon a time', max_tokens: 8, temperature: 0 }),
  }),
);
console.log((await response.json()).choices[0].text);
await engine.dispose();
