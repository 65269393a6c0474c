/**
 * Qwen2-Audio: Qwen2AudioProcessor's rules. Each audio part goes through the Whisper
 * feature extractor padded to n_samples (30 s in the real model), with the feature
 * attention mask marking its ceil(samples / hop) real frames; the encoder's convolution
 * (stride 2) and average pooling (stride 2) leave ((frames − 1) // 2 + 1 − 2) // 2 + 1
 * audio tokens. Each `<|AUDIO|>` in the prompt becomes `<|AUDIO|>` × that count, and
 * `<|audio_bos|>` … `<|audio_eos|>` around it when the text does not already put it
 * between them (the chat template does; a bare /generate audio part does not).
 */
import type { DecodedAudio } from '../../media/index.js';
import { tokenIdOf, type JsonObject } from '../config-fields.js';
import type { AudioProcessor, AudioProcessorSpec, ProcessedAudio } from '../audio/types.js';
import { WhisperFeatureExtractor, whisperFeatureSettings } from '../audio/whisper-features.js';

const AUDIO_TOKEN = '<|AUDIO|>';
const AUDIO_BOS = '<|audio_bos|>';
const AUDIO_EOS = '<|audio_eos|>';

/** Audio tokens for a part with `validFrames` real mel frames. */
export function qwen2AudioTokens(validFrames: number): number {
  const inputLength = Math.floor((validFrames - 1) / 2) + 1;
  return Math.floor((inputLength - 2) / 2) + 1;
}

export class Qwen2AudioProcessor implements AudioProcessor {
  readonly family = 'qwen2_audio';
  readonly placeholder = AUDIO_TOKEN;
  readonly contentFormat = 'parts' as const;
  readonly maxSeconds: number;

  private constructor(
    readonly extractor: WhisperFeatureExtractor,
    readonly audioTokenId: number,
  ) {
    this.maxSeconds = extractor.settings.chunkLength;
  }

  static create(files: { config: JsonObject; preprocessorConfig: JsonObject }, tokenToId: (token: string) => number | undefined): Qwen2AudioProcessor {
    const extractor = new WhisperFeatureExtractor(whisperFeatureSettings(files.preprocessorConfig));
    const audioTokenId = tokenIdOf(tokenToId, AUDIO_TOKEN, 'Qwen2-Audio');
    tokenIdOf(tokenToId, AUDIO_BOS, 'Qwen2-Audio');
    tokenIdOf(tokenToId, AUDIO_EOS, 'Qwen2-Audio');
    const configured = files.config.audio_token_index ?? files.config.audio_token_id;
    if (typeof configured === 'number' && configured !== audioTokenId) {
      throw new Error(`config.json "audio_token_index" is ${configured}, but the tokenizer's "${AUDIO_TOKEN}" is ${audioTokenId}.`);
    }
    return new Qwen2AudioProcessor(extractor, audioTokenId);
  }

  static fromSpec(spec: Extract<AudioProcessorSpec, { family: 'qwen2_audio' }>): Qwen2AudioProcessor {
    return new Qwen2AudioProcessor(new WhisperFeatureExtractor(spec.settings), spec.audioTokenId);
  }

  get spec(): AudioProcessorSpec {
    return { family: 'qwen2_audio', settings: this.extractor.settings, audioTokenId: this.audioTokenId };
  }

  process(audio: DecodedAudio, param: string): ProcessedAudio {
    const { nSamples, featureSize } = this.extractor.settings;
    const { features, frames, validFrames } = this.extractor.extract(audio.samples, nSamples);
    return {
      param,
      features,
      melBins: featureSize,
      frames,
      validFrames,
      audioTokens: qwen2AudioTokens(validFrames),
      seconds: audio.samples.length / audio.sampleRate,
    };
  }

  declaredAudioTokens(samples: number): number {
    const { nSamples, hopLength, nbMaxFrames } = this.extractor.settings;
    return qwen2AudioTokens(Math.min(nbMaxFrames, Math.ceil(Math.min(samples, nSamples) / hopLength)));
  }

  expansion(audio: ProcessedAudio, before: string, after: string): string {
    const tokens = AUDIO_TOKEN.repeat(audio.audioTokens);
    const bracketed = before.endsWith(AUDIO_BOS) || after.startsWith(AUDIO_EOS);
    return bracketed ? tokens : `${AUDIO_BOS}${tokens}${AUDIO_EOS}`;
  }
}
