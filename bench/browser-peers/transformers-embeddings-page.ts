/**
 * transformers.js's feature-extraction pipeline (onnxruntime-web WASM) on an embedding
 * folder, the same files the in-page engine embeds with: the peer a browser user picks for
 * embeddings. Served by bench/embeddings-page.ts; `?threads=N` sets onnxruntime-web's
 * threads, `?model=NAME` the folder under ./models/, `?pooling=mean|cls|last_token` and
 * `?normalize=1` what the folder's sentence-transformers files say (read by the bench).
 */
import { pipeline } from '@huggingface/transformers';
import { threadsFromQuery } from './page-timing.js';
import { useLocalTransformersWasm } from './transformers-env.js';

export interface EmbeddingPeerPage {
  runsOn: string;
  embed(texts: string[]): Promise<number[][]>;
}

async function load(): Promise<EmbeddingPeerPage> {
  const query = new URLSearchParams(location.search);
  const threads = threadsFromQuery();
  useLocalTransformersWasm(threads);
  const extractor = await pipeline('feature-extraction', query.get('model') ?? '', { dtype: 'fp32', device: 'wasm' });
  const pooling = (query.get('pooling') ?? 'mean') as 'mean';
  const normalize = query.get('normalize') === '1';
  return {
    runsOn: `transformers.js, onnxruntime-web wasm, ${threads} thread(s), crossOriginIsolated ${crossOriginIsolated}`,
    embed: async (texts) => (await extractor(texts, { pooling, normalize })).tolist() as number[][],
  };
}

(window as unknown as { peerPage: Promise<EmbeddingPeerPage> }).peerPage = load();
