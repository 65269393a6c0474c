import type { InferenceSession, OrtRuntime, Tensor } from './ort-runtime.js';

/**
 * onnxruntime-node, as the engine uses it under Node (main thread and model thread).
 *
 * Where the JavaScript engine has a global Float16Array (Node 24, Bun, Deno), onnxruntime-common
 * turns every float16 tensor's Uint16Array into a Float16Array view, and so does every float16
 * output handed back; onnxruntime-node 1.30's binding then reads that view's byte length as 0
 * and refuses the run ("not enough space: expected 224, got 0", microsoft/onnxruntime#32323).
 * So every session's float16 inputs are handed over as the Uint16Array view of the same memory,
 * which the binding has always read (and is what Node 20 has anyway). onnxruntime-web reads
 * either, so the browser and workerd need nothing.
 */
export async function loadOnnxruntimeNode(): Promise<OrtRuntime> {
  return withFloat16FeedsAsBits((await import('onnxruntime-node')) as unknown as OrtRuntime);
}

export function withFloat16FeedsAsBits(ort: OrtRuntime): OrtRuntime {
  return {
    Tensor: ort.Tensor,
    InferenceSession: {
      async create(model, options) {
        const session = await ort.InferenceSession.create(model, options);
        const run = session.run.bind(session) as (feeds: InferenceSession.FeedsType, ...rest: unknown[]) => Promise<InferenceSession.ReturnType>;
        session.run = ((feeds: InferenceSession.FeedsType, ...rest: unknown[]) => run(float16AsBits(feeds), ...rest)) as InferenceSession['run'];
        return session;
      },
    },
  };
}

function float16AsBits(feeds: InferenceSession.FeedsType): InferenceSession.FeedsType {
  for (const tensor of Object.values(feeds)) {
    if (tensor.type === 'float16' && tensor.location === 'cpu') viewAsBits(tensor);
  }
  return feeds;
}

/** The tensor keeps its memory; only what its `data` hands out becomes the bits view (once). */
function viewAsBits(tensor: Tensor): void {
  const data = tensor.data as ArrayBufferView & { length: number };
  if (data instanceof Uint16Array) return;
  const bits = new Uint16Array(data.buffer, data.byteOffset, data.length);
  Object.defineProperty(tensor, 'data', { value: bits, configurable: true, enumerable: true });
}
