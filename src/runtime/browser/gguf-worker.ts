/**
 * The playground's GGUF build worker (bundled as dist/playground/gguf-worker.js by
 * scripts/build-playground.ts): one message in, a GGUF's model files out, the graph
 * built off the page's main thread (browser-gguf.ts says how).
 */
import { answerGgufBuild, type GgufBuildRequest } from './gguf.js';

const scope = globalThis as unknown as {
  onmessage: ((event: MessageEvent<GgufBuildRequest>) => void) | null;
  postMessage(message: unknown, transfer?: Transferable[]): void;
};

scope.onmessage = (event) => {
  void answerGgufBuild(event.data, (message, transfer) => scope.postMessage(message, transfer ?? []));
};
