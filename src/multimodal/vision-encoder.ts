/**
 * onnx/vision_encoder.onnx: pixel values → image features (projector included), its I/O
 * read from the session. transformers.js's Idefics3 / SmolVLM exports take
 * pixel_values [batch, images, 3, H, W] with pixel_attention_mask [batch, images, H, W];
 * LLaVA exports take pixel_values [images, 3, H, W]. Any other required input is refused
 * at startup by name.
 */
import { float32Of, float32ToFloat16 } from '../onnx/float16.js';
import type { InferenceSession, OrtRuntime, Tensor } from '../onnx/ort-runtime.js';
import type { ProcessedImage } from './types.js';

export class VisionEncoder {
  private constructor(
    private readonly ort: OrtRuntime,
    private readonly session: InferenceSession,
    /** 5: [batch, frames, 3, H, W]; 4: [frames, 3, H, W]. */
    private readonly pixelRank: 4 | 5,
    private readonly pixelType: 'float32' | 'float16',
    private readonly maskType: 'bool' | 'int64' | null,
    private readonly outputName: string,
  ) {}

  static async create(ort: OrtRuntime, model: Uint8Array | string, options: InferenceSession.SessionOptions, label: string): Promise<VisionEncoder> {
    const session = await ort.InferenceSession.create(model, options);
    try {
      const fail = (message: string): never => {
        throw new Error(`${label} cannot be served: ${message}`);
      };
      const metadata = new Map((session.inputMetadata ?? []).map((entry) => [entry.name, entry]));
      if (!session.inputNames.includes('pixel_values')) fail(`it has no "pixel_values" input (inputs: ${session.inputNames.join(', ')}).`);
      const unknown = session.inputNames.filter((name) => name !== 'pixel_values' && name !== 'pixel_attention_mask');
      if (unknown.length > 0) {
        fail(`it requires ${unknown.map((name) => `"${name}"`).join(', ')}, which the engine does not feed (it feeds pixel_values and pixel_attention_mask).`);
      }
      const pixels = metadata.get('pixel_values');
      const rank = pixels?.isTensor ? pixels.shape.length : 5;
      if (rank !== 4 && rank !== 5) fail(`its "pixel_values" has rank ${rank}; the engine feeds [images, 3, H, W] or [batch, images, 3, H, W].`);
      const pixelType = pixels?.isTensor ? pixels.type : 'float32';
      if (pixelType !== 'float32' && pixelType !== 'float16') fail(`its "pixel_values" is ${pixelType}; the engine feeds float32 or float16.`);
      let maskType: 'bool' | 'int64' | null = null;
      if (session.inputNames.includes('pixel_attention_mask')) {
        const mask = metadata.get('pixel_attention_mask');
        const type = mask?.isTensor ? mask.type : 'bool';
        if (type !== 'bool' && type !== 'int64') fail(`its "pixel_attention_mask" is ${type}; the engine feeds bool or int64.`);
        maskType = type as 'bool' | 'int64';
      }
      return new VisionEncoder(ort, session, rank as 4 | 5, pixelType as 'float32' | 'float16', maskType, session.outputNames[0]);
    } catch (error) {
      await session.release();
      throw error;
    }
  }

  /** The image's features, [imageTokens, hidden] flattened; throws when the graph gives another count. */
  async encode(image: ProcessedImage, hidden: number): Promise<Float32Array> {
    const { frames, height, width } = image;
    const lead = this.pixelRank === 5 ? [1, frames] : [frames];
    const feeds: Record<string, Tensor> = {
      pixel_values:
        this.pixelType === 'float32'
          ? new this.ort.Tensor('float32', image.pixels, [...lead, 3, height, width])
          : new this.ort.Tensor('float16', float32ToFloat16(image.pixels), [...lead, 3, height, width]),
    };
    if (this.maskType !== null) {
      // Every frame is fully real: the processors emit frames of one size, unpadded.
      const count = frames * height * width;
      feeds.pixel_attention_mask =
        this.maskType === 'bool'
          ? new this.ort.Tensor('bool', new Uint8Array(count).fill(1), [...lead, height, width])
          : new this.ort.Tensor('int64', new BigInt64Array(count).fill(1n), [...lead, height, width]);
    }
    const outputs = await this.session.run(feeds);
    const features = float32Of(outputs[this.outputName].data as Float32Array | Uint16Array);
    if (features.length !== image.imageTokens * hidden) {
      throw new Error(
        `the vision encoder gave ${features.length / hidden} feature vectors of size ${hidden} for an image the processor expanded to ${image.imageTokens} image tokens`,
      );
    }
    return features;
  }

  async dispose(): Promise<void> {
    await this.session.release();
  }
}
