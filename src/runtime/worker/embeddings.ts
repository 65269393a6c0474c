/**
 * The Worker entry for an embedding model (`wrangler dev --env embeddings`, `wrangler
 * deploy --env embeddings`): the same app as main.ts, serving /v1/embeddings from the
 * model folder EMBEDDING_MODEL names, which the env's build step
 * (scripts/build-worker-embeddings.ts) checked against the Worker's limits and copied to
 * dist/worker-embeddings/ as the modules imported here. docs/workerd.md has the how-to.
 */
import onnx from '../../../dist/worker-embeddings/model.onnx';
import bundled from '../../../dist/worker-embeddings/model.json';
import { workerEmbeddingEngine, type BundledEmbeddingInfo } from './embedding-engine.js';
import { createWorkerHandler } from './handler.js';

const info = bundled as BundledEmbeddingInfo;

export default createWorkerHandler(workerEmbeddingEngine({ ...info, onnx }), info.name);
