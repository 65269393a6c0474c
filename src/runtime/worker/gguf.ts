/**
 * The Worker entry for a GGUF (`wrangler dev --env gguf`, `wrangler deploy --env gguf`):
 * the same app as worker.ts, serving the .gguf named by MODEL_GGUF, which the env's build
 * step (scripts/build-worker-gguf.ts) checked against the Worker's limits and copied to
 * dist/worker-gguf/ as the Data module imported here. docs/workerd.md has the how-to.
 */
import gguf from '../../../dist/worker-gguf/model.gguf';
import bundled from '../../../dist/worker-gguf/model.json';
import { workerGgufEngine } from './gguf-engine.js';
import { createWorkerHandler } from './handler.js';

export default createWorkerHandler(workerGgufEngine({ name: bundled.name, bytes: gguf }), bundled.name);
