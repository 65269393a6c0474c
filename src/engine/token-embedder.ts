import type { InferenceSession, OrtRuntime, Tensor } from '../onnx/ort-runtime.js';
import { float32Of } from '../onnx/float16.js';

/**
 * The embed_tokens graph of a vision-language export (onnx/embed_tokens.onnx: input_ids →
 * inputs_embeds), for decoders that take embeddings instead of ids: every prefill and
 * every decode step embeds its ids here before the decoder runs.
 */
export class TokenEmbedder {
  private constructor(
    private readonly ort: OrtRuntime,
    private readonly session: InferenceSession,
    private readonly inputName: string,
    private readonly outputName: string,
    private readonly idsType: 'int64' | 'int32',
    /** Embedding size, learnt from the first call when the graph leaves it dynamic. */
    public size: number | null,
  ) {}

  static async create(
    ort: OrtRuntime,
    model: Uint8Array | string,
    options: InferenceSession.SessionOptions,
    label: string,
  ): Promise<TokenEmbedder> {
    const session = await ort.InferenceSession.create(model, options);
    const fail = async (message: string): Promise<never> => {
      await session.release();
      throw new Error(`${label} cannot be served: ${message}`);
    };
    if (session.inputNames.length !== 1) {
      await fail(`it must take one input (the token ids), it takes ${session.inputNames.join(', ')}.`);
    }
    const input = session.inputMetadata?.[0];
    const idsType = input?.isTensor ? input.type : 'int64';
    if (idsType !== 'int64' && idsType !== 'int32') await fail(`its ids input is ${idsType}; the engine feeds int64 or int32.`);
    const output = session.outputMetadata?.[0];
    const size = output?.isTensor ? output.shape.at(-1) : undefined;
    return new TokenEmbedder(
      ort,
      session,
      session.inputNames[0],
      session.outputNames[0],
      idsType as 'int64' | 'int32',
      typeof size === 'number' ? size : null,
    );
  }

  /** [batch, seqLen] ids → [batch, seqLen, size] float32 embeddings. */
  async embed(ids: BigInt64Array, dims: [number, number]): Promise<Float32Array> {
    const tensor: Tensor =
      this.idsType === 'int64'
        ? new this.ort.Tensor('int64', ids, dims)
        : new this.ort.Tensor('int32', Int32Array.from(ids, (id) => Number(id)), dims);
    const outputs = await this.session.run({ [this.inputName]: tensor });
    const result = outputs[this.outputName];
    this.size ??= result.dims.at(-1) as number;
    return float32Of(result.data as Float32Array | Uint16Array);
  }

  async dispose(): Promise<void> {
    await this.session.release();
  }
}
