/**
 * An audio-language model's audio side: its family's processor (Whisper log-mel features
 * and the prompt expansion) and its audio encoder, chosen from config.json's model_type.
 * The engine owns the decoder and embed_tokens; this turns a prompt's audio parts into
 * the text that stands for them and the features the engine splices in at their audio
 * tokens.
 */
import type { PlaceholderEmbeds } from '../onnx/placeholder-embeds.js';
import type { CompanionGraph } from '../onnx/model-files.js';
import type { InferenceSession, OrtRuntime } from '../onnx/ort-runtime.js';
import type { MediaDecoder } from '../media/index.js';
import { AudioEncoder } from './audio/audio-encoder.js';
import { DEFAULT_AUDIO_LIMITS, type AudioLimits, type AudioProcessor, type ProcessedAudio, type PromptAudio } from './audio/types.js';
import { processAudio } from './audio-processing.js';
import type { JsonObject } from './config-fields.js';
import { Qwen2AudioProcessor } from './processors/qwen2-audio.js';
import { UltravoxProcessor } from './processors/ultravox.js';
import { MultimodalRequestError } from './types.js';
import { placeholderFeatures } from './placeholder-features.js';

export interface AudioLanguageFiles {
  config: JsonObject;
  preprocessorConfig?: JsonObject;
  processorConfig?: JsonObject;
  audioEncoder: CompanionGraph;
}

/** model_type → processor family. */
const FAMILIES: Record<string, 'qwen2_audio' | 'ultravox'> = { qwen2_audio: 'qwen2_audio', ultravox: 'ultravox' };

/** A prompt with its audio processed: the text with every placeholder expanded. */
export interface AudioPrompt {
  text: string;
  audio: ProcessedAudio[];
}

export class AudioLanguageModel {
  private constructor(
    readonly processor: AudioProcessor,
    private readonly encoder: AudioEncoder,
    readonly encoderFile: string,
  ) {}

  static async load(options: {
    ort: OrtRuntime;
    files: AudioLanguageFiles;
    tokenToId: (token: string) => number | undefined;
    sessionOptions?: InferenceSession.SessionOptions;
    loadFromPath?: boolean;
  }): Promise<AudioLanguageModel> {
    const { files } = options;
    const modelType = String(files.config.model_type ?? '');
    const family = FAMILIES[modelType];
    if (family === undefined) {
      throw new Error(
        `${files.audioEncoder.file} is present, but config.json's model_type "${modelType}" has no audio processor here ` +
          `(supported: ${Object.keys(FAMILIES).join(', ')}).`,
      );
    }
    if (files.preprocessorConfig === undefined) throw new Error(`A ${modelType} model needs preprocessor_config.json (its feature extractor's settings).`);
    const extractorType = files.preprocessorConfig.feature_extractor_type;
    if (extractorType !== undefined && extractorType !== 'WhisperFeatureExtractor') {
      throw new Error(`preprocessor_config.json: feature_extractor_type "${String(extractorType)}" is not supported (WhisperFeatureExtractor is).`);
    }
    const processorFiles = { config: files.config, preprocessorConfig: files.preprocessorConfig, processorConfig: files.processorConfig ?? {} };
    const processor =
      family === 'qwen2_audio' ? Qwen2AudioProcessor.create(processorFiles, options.tokenToId) : UltravoxProcessor.create(processorFiles, options.tokenToId);
    const source = options.loadFromPath && files.audioEncoder.path !== undefined ? files.audioEncoder.path : files.audioEncoder.onnx;
    const melBins = processor.extractor.settings.featureSize;
    const encoder = await AudioEncoder.create(options.ort, source, options.sessionOptions ?? {}, files.audioEncoder.file, melBins);
    return new AudioLanguageModel(processor, encoder, files.audioEncoder.file);
  }

  get audioTokenId(): number {
    return this.processor.audioTokenId;
  }

  /** The rate the feature extractor wants its audio at. */
  get samplingRate(): number {
    return this.processor.extractor.settings.samplingRate;
  }

  /**
   * The model's window per part and MEDIA_MAX_AUDIO_SECONDS_PER_PROMPT over the prompt:
   * for decoded audio, and before decoding for the durations the headers declare.
   */
  checkDurations(parts: readonly { param: string; seconds: number }[], limits: AudioLimits = DEFAULT_AUDIO_LIMITS): void {
    const { maxSeconds } = this.processor;
    let total = 0;
    for (const { param, seconds } of parts) {
      if (seconds > maxSeconds) {
        throw new MultimodalRequestError(
          `${param}: the audio lasts ${seconds.toFixed(1)} s; this model hears at most ${maxSeconds} s per audio part (chunk_length).`,
          param,
        );
      }
      total += seconds;
      if (total > limits.maxAudioSecondsPerPrompt) {
        throw new MultimodalRequestError(
          `${param}: the prompt's audio lasts ${total.toFixed(1)} s up to this part, more than the ${limits.maxAudioSecondsPerPrompt} s ` +
            'a prompt may carry (MEDIA_MAX_AUDIO_SECONDS_PER_PROMPT).',
          param,
        );
      }
    }
  }

  /**
   * Before decoding, from the durations headers declare exactly (WAV, FLAC): the fewest audio
   * tokens the parts become, so audio that cannot fit the context is refused before any
   * decoding or feature extraction. A part's samples are counted one hop short of its
   * declared length (resampling rounds its length by a sample or two).
   */
  declaredPromptTokens(parts: readonly { seconds: number }[]): number {
    const { samplingRate, hopLength } = this.processor.extractor.settings;
    let tokens = 0;
    for (const { seconds } of parts) {
      const samples = Math.floor(seconds * samplingRate) - hopLength;
      if (samples > this.processor.extractor.settings.nFft / 2) tokens += this.processor.declaredAudioTokens(samples);
    }
    return tokens;
  }

  /**
   * Runs the processor over a prompt's audio parts (on the media decoding thread where
   * `decoder` has one, under its deadline), after checking their durations: the slow half
   * of a prompt's expansion, done before the chat template so that `expandPrompt` stays
   * synchronous and cheap. Throws MultimodalRequestError naming the part over a limit or
   * too short, MediaError 'timeout', or the signal's reason.
   */
  async processAudio(
    audio: readonly PromptAudio[],
    limits: AudioLimits = DEFAULT_AUDIO_LIMITS,
    decoder?: MediaDecoder,
    signal?: AbortSignal,
  ): Promise<ProcessedAudio[]> {
    this.checkDurations(
      audio.map((part) => ({ param: part.param, seconds: part.audio.samples.length / part.audio.sampleRate })),
      limits,
    );
    return processAudio(this.processor, audio, decoder, signal);
  }

  /**
   * Expands `text`, whose placeholders (one per part, in order) were written by the chat
   * template or the prompt's parts, with the processed parts' audio tokens. Throws
   * MultimodalRequestError when the placeholders do not match the parts.
   */
  expandPrompt(text: string, processed: readonly ProcessedAudio[], param: string | null): AudioPrompt {
    const { placeholder } = this.processor;
    const found: number[] = [];
    for (let at = text.indexOf(placeholder); at >= 0; at = text.indexOf(placeholder, at + placeholder.length)) found.push(at);
    if (found.length !== processed.length) {
      throw new MultimodalRequestError(
        `The prompt has ${found.length} "${placeholder}" placeholders for ${processed.length} audio parts: ` +
          'each audio part stands for one, and the text may not contain the placeholder itself.',
        param,
      );
    }
    let expanded = '';
    let last = 0;
    found.forEach((at, index) => {
      const end = at + placeholder.length;
      expanded += text.slice(last, at) + this.processor.expansion(processed[index], text.slice(0, at), text.slice(end));
      last = end;
    });
    expanded += text.slice(last);
    return { text: expanded, audio: [...processed] };
  }

  /** Runs the audio encoder over every part: the features for the prompt's audio tokens, in order. */
  async encode(audio: readonly ProcessedAudio[], hidden: number): Promise<PlaceholderEmbeds[]> {
    return placeholderFeatures(audio, this.processor.audioTokenId, (part) => this.encoder.encode(part, hidden));
  }

  describe(): string {
    return `${this.processor.family} audio processor (Whisper log-mel), ${this.encoderFile}`;
  }

  async dispose(): Promise<void> {
    await this.encoder.dispose();
  }
}
