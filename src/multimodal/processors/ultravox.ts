/**
 * Ultravox, as transformers.js's UltravoxProcessor (the onnx-community exports' own
 * processor) does it: the Whisper features of the audio as long as it is (no padding to
 * the window; frames = samples // hop, at most nb_max_frames), and each `<|audio|>`
 * (processor_config.json's audio_placeholder) becomes that placeholder ×
 * 1 + ceil(round(samples / encoder_ds_factor + 1e-4) / stack_factor). Its chat template
 * prints content as text, so chat audio parts reach it as the placeholder before the text.
 */
import type { DecodedAudio } from '../../media/index.js';
import { positiveIntField, tokenIdOf, type JsonObject } from '../config-fields.js';
import type { AudioProcessor, AudioProcessorSpec, ProcessedAudio } from '../audio/types.js';
import { WhisperFeatureExtractor, whisperFeatureSettings } from '../audio/whisper-features.js';

export function ultravoxAudioTokens(samples: number, encoderDownsampling: number, stackFactor: number): number {
  const encoderFrames = Math.round(samples / encoderDownsampling + 1e-4);
  return 1 + Math.ceil(encoderFrames / stackFactor);
}

export class UltravoxProcessor implements AudioProcessor {
  readonly family = 'ultravox';
  readonly contentFormat = 'string' as const;
  readonly maxSeconds: number;

  private constructor(
    readonly extractor: WhisperFeatureExtractor,
    readonly placeholder: string,
    readonly audioTokenId: number,
    readonly encoderDownsampling: number,
    readonly stackFactor: number,
  ) {
    this.maxSeconds = extractor.settings.chunkLength;
  }

  static create(
    files: { config: JsonObject; preprocessorConfig: JsonObject; processorConfig: JsonObject },
    tokenToId: (token: string) => number | undefined,
  ): UltravoxProcessor {
    const processor = files.processorConfig;
    const file = 'processor_config.json';
    const extractor = new WhisperFeatureExtractor(whisperFeatureSettings(files.preprocessorConfig));
    const placeholder = typeof processor.audio_placeholder === 'string' ? processor.audio_placeholder : '<|audio|>';
    const audioTokenId = tokenIdOf(tokenToId, placeholder, 'Ultravox');
    const configured = files.config.audio_token_index ?? files.config.audio_token_id;
    if (typeof configured === 'number' && configured >= 0 && configured !== audioTokenId) {
      throw new Error(`config.json "audio_token_index" is ${configured}, but the tokenizer's "${placeholder}" is ${audioTokenId}.`);
    }
    const downsampling = positiveIntField(processor, 'encoder_ds_factor', 2 * extractor.settings.hopLength, file);
    const stack = positiveIntField(processor, 'stack_factor', 8, file);
    return new UltravoxProcessor(extractor, placeholder, audioTokenId, downsampling, stack);
  }

  static fromSpec(spec: Extract<AudioProcessorSpec, { family: 'ultravox' }>): UltravoxProcessor {
    return new UltravoxProcessor(new WhisperFeatureExtractor(spec.settings), spec.placeholder, spec.audioTokenId, spec.encoderDownsampling, spec.stackFactor);
  }

  get spec(): AudioProcessorSpec {
    const { placeholder, audioTokenId, encoderDownsampling, stackFactor } = this;
    return { family: 'ultravox', settings: this.extractor.settings, placeholder, audioTokenId, encoderDownsampling, stackFactor };
  }

  process(audio: DecodedAudio, param: string): ProcessedAudio {
    const { featureSize } = this.extractor.settings;
    const { features, frames } = this.extractor.extract(audio.samples, null);
    return {
      param,
      features,
      melBins: featureSize,
      frames,
      validFrames: frames,
      audioTokens: ultravoxAudioTokens(audio.samples.length, this.encoderDownsampling, this.stackFactor),
      seconds: audio.samples.length / audio.sampleRate,
    };
  }

  declaredAudioTokens(samples: number): number {
    return ultravoxAudioTokens(samples, this.encoderDownsampling, this.stackFactor);
  }

  expansion(audio: ProcessedAudio): string {
    return this.placeholder.repeat(audio.audioTokens);
  }
}
