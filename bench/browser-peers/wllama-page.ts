/**
 * wllama (llama.cpp in WASM) on the stories260K GGUF, CPU only: the peer a browser user
 * picks for GGUF weights. Served by bench/browser-peers/serve.ts (cross-origin isolated, so
 * wllama may start its threads); `?threads=N` sets llama.cpp's thread count.
 */
import { LoggerWithoutDebug, Wllama } from '@wllama/wllama';
import { PROMPT_TEXT, threadsFromQuery, timeRequest, type PeerPage } from './page-timing.js';

async function load(): Promise<PeerPage> {
  const threads = threadsFromQuery();
  const wllama = new Wllama({ default: './wllama.wasm' }, { suppressNativeLog: true, logger: LoggerWithoutDebug });
  const gguf = await (await fetch('./model.gguf')).blob();
  await wllama.loadModel([gguf], { n_threads: threads, n_gpu_layers: 0, n_ctx: 512, n_batch: 512 });
  return {
    runsOn: `wllama ${Wllama.getLibllamaVersion()}, ${threads} thread(s), crossOriginIsolated ${crossOriginIsolated}`,
    run: (tokens) =>
      timeRequest(async (onToken) => {
        let completionTokens: number | undefined;
        await wllama.createCompletion({
          prompt: PROMPT_TEXT,
          max_tokens: tokens,
          temperature: 0,
          ignore_eos: true,
          stream: true,
          onData: (chunk) => {
            if (chunk.choices.length > 0) onToken();
            completionTokens = chunk.usage?.completion_tokens ?? completionTokens;
          },
        });
        return completionTokens;
      }),
  };
}

(window as unknown as { peerPage: Promise<PeerPage> }).peerPage = load();
