/**
 * onnx/audio_encoder.onnx: log-mel features → one embedding per audio frame the encoder
 * keeps (projector included), its I/O read from the session. The features go in as
 * `input_features` (Qwen2-Audio, Whisper) or `audio_values` (transformers.js's Ultravox
 * exports) [batch, mel, frames]; a `feature_attention_mask` (or `attention_mask`)
 * [batch, frames] marks the real frames. The output (`audio_features`, else the first)
 * is [batch, rows, hidden] or [rows, hidden]; the first `audioTokens` rows are the
 * audio's (Qwen2-Audio's encoder emits rows for the padding too and the model keeps the
 * first ones). Any other required input is refused at startup by name.
 */
import { float32Of, float32ToFloat16 } from '../../onnx/float16.js';
import type { InferenceSession, OrtRuntime, Tensor } from '../../onnx/ort-runtime.js';
import type { ProcessedAudio } from './types.js';

const FEATURE_INPUTS = ['input_features', 'audio_values'];
const MASK_INPUTS = ['feature_attention_mask', 'attention_mask'];

export class AudioEncoder {
  private constructor(
    private readonly ort: OrtRuntime,
    private readonly session: InferenceSession,
    private readonly featureInput: string,
    private readonly featureType: 'float32' | 'float16',
    private readonly mask: { name: string; type: 'int64' | 'int32' | 'bool' } | null,
    private readonly outputName: string,
  ) {}

  static async create(
    ort: OrtRuntime,
    model: Uint8Array | string,
    options: InferenceSession.SessionOptions,
    label: string,
    melBins: number,
  ): Promise<AudioEncoder> {
    const session = await ort.InferenceSession.create(model, options);
    try {
      const fail = (message: string): never => {
        throw new Error(`${label} cannot be served: ${message}`);
      };
      const metadata = new Map((session.inputMetadata ?? []).map((entry) => [entry.name, entry]));
      const featureInput = FEATURE_INPUTS.find((name) => session.inputNames.includes(name));
      if (featureInput === undefined) fail(`it has no "input_features" or "audio_values" input (inputs: ${session.inputNames.join(', ')}).`);
      const maskName = MASK_INPUTS.find((name) => session.inputNames.includes(name));
      const unknown = session.inputNames.filter((name) => name !== featureInput && name !== maskName);
      if (unknown.length > 0) {
        fail(`it requires ${unknown.map((name) => `"${name}"`).join(', ')}, which the engine does not feed (it feeds ${featureInput} and feature_attention_mask).`);
      }
      const features = metadata.get(featureInput!);
      const shape = features?.isTensor ? features.shape : [];
      if (features?.isTensor && shape.length !== 3) fail(`its "${featureInput}" has rank ${shape.length}; the engine feeds [batch, mel bins, frames].`);
      if (typeof shape[1] === 'number' && shape[1] !== melBins) {
        fail(`its "${featureInput}" takes ${shape[1]} mel bins, but preprocessor_config.json's feature_size is ${melBins}.`);
      }
      const featureType = features?.isTensor ? features.type : 'float32';
      if (featureType !== 'float32' && featureType !== 'float16') fail(`its "${featureInput}" is ${featureType}; the engine feeds float32 or float16.`);
      let mask: { name: string; type: 'int64' | 'int32' | 'bool' } | null = null;
      if (maskName !== undefined) {
        const entry = metadata.get(maskName);
        const type = entry?.isTensor ? entry.type : 'int64';
        if (type !== 'int64' && type !== 'int32' && type !== 'bool') fail(`its "${maskName}" is ${type}; the engine feeds int64, int32 or bool.`);
        mask = { name: maskName, type: type as 'int64' | 'int32' | 'bool' };
      }
      const outputName = session.outputNames.includes('audio_features') ? 'audio_features' : session.outputNames[0];
      return new AudioEncoder(ort, session, featureInput!, featureType as 'float32' | 'float16', mask, outputName);
    } catch (error) {
      await session.release();
      throw error;
    }
  }

  /** The audio's embeddings, [audioTokens, hidden] flattened; throws when the graph gives fewer rows or another width. */
  async encode(audio: ProcessedAudio, hidden: number): Promise<Float32Array> {
    const { melBins, frames, validFrames } = audio;
    const feeds: Record<string, Tensor> = {
      [this.featureInput]:
        this.featureType === 'float32'
          ? new this.ort.Tensor('float32', audio.features, [1, melBins, frames])
          : new this.ort.Tensor('float16', float32ToFloat16(audio.features), [1, melBins, frames]),
    };
    if (this.mask !== null) {
      const { name, type } = this.mask;
      if (type === 'int64') {
        const data = new BigInt64Array(frames);
        data.fill(1n, 0, validFrames);
        feeds[name] = new this.ort.Tensor('int64', data, [1, frames]);
      } else if (type === 'int32') {
        feeds[name] = new this.ort.Tensor('int32', new Int32Array(frames).fill(1, 0, validFrames), [1, frames]);
      } else {
        feeds[name] = new this.ort.Tensor('bool', new Uint8Array(frames).fill(1, 0, validFrames), [1, frames]);
      }
    }
    const outputs = await this.session.run(feeds);
    const output = outputs[this.outputName];
    const width = output.dims.at(-1);
    if (width !== hidden) throw new Error(`the audio encoder gave features of size ${width}, the decoder takes ${hidden}`);
    const data = float32Of(output.data as Float32Array | Uint16Array);
    const rows = data.length / hidden;
    if (rows < audio.audioTokens) {
      throw new Error(`the audio encoder gave ${rows} feature vectors for an audio part the processor expanded to ${audio.audioTokens} audio tokens`);
    }
    return data.slice(0, audio.audioTokens * hidden);
  }

  async dispose(): Promise<void> {
    await this.session.release();
  }
}
