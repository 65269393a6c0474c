/**
 * transformers.js (onnxruntime-web WASM) on the embedded model's ONNX folder, the same
 * files the in-page engine runs: the peer a browser user picks for ONNX weights. Served by
 * bench/browser-peers/serve.ts; `?threads=N` sets onnxruntime-web's thread count.
 */
import { AutoModelForCausalLM, AutoTokenizer, BaseStreamer, type PreTrainedModel, type TextStreamer } from '@huggingface/transformers';
import { PROMPT_TEXT, threadsFromQuery, timeRequest, type PeerPage } from './page-timing.js';
import { useLocalTransformersWasm } from './transformers-env.js';

/** Counts generated tokens: generate() puts the prompt once, then each new token. */
class TokenCounter extends BaseStreamer {
  private promptSeen = false;
  constructor(private readonly onToken: () => void) {
    super();
  }
  override put(): void {
    if (this.promptSeen) this.onToken();
    this.promptSeen = true;
  }
  override end(): void {}
}

async function load(): Promise<PeerPage> {
  const threads = threadsFromQuery();
  useLocalTransformersWasm(threads);
  const [model, tokenizer] = await Promise.all([
    AutoModelForCausalLM.from_pretrained('stories260k', { dtype: 'fp32', device: 'wasm' }),
    AutoTokenizer.from_pretrained('stories260k'),
  ]);
  const inputs = tokenizer(PROMPT_TEXT);
  return {
    runsOn: `transformers.js, onnxruntime-web wasm, ${threads} thread(s), crossOriginIsolated ${crossOriginIsolated}`,
    run: (tokens) =>
      timeRequest(async (onToken) => {
        await (model as PreTrainedModel).generate({
          ...inputs,
          max_new_tokens: tokens,
          min_new_tokens: tokens,
          do_sample: false,
          // Typed as a TextStreamer in its .d.ts; generate() calls only BaseStreamer's put/end.
          streamer: new TokenCounter(onToken) as unknown as TextStreamer,
        });
      }),
  };
}

(window as unknown as { peerPage: Promise<PeerPage> }).peerPage = load();
