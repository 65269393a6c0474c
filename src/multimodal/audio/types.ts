/**
 * The pipeline of an audio-language model, between decoded audio and the engine: the
 * family's processor turns each audio part into Whisper log-mel features and the text
 * that stands for it in the prompt; the audio encoder turns the features into one
 * embedding per audio token; the engine splices those in at the audio tokens. A family
 * (processors/) is one file.
 */
import type { DecodedAudio } from '../../media/index.js';
import type { WhisperFeatureExtractor, WhisperFeatureSettings } from './whisper-features.js';

/** A decoded audio part of a prompt, with the request parameter it came from. */
export interface PromptAudio {
  param: string;
  audio: DecodedAudio;
}

/** One audio part after the family's processor. */
export interface ProcessedAudio {
  /** The request parameter it came from (for errors). */
  param: string;
  /** input_features [melBins, frames], row-major. */
  features: Float32Array;
  melBins: number;
  frames: number;
  /** Frames of real audio (the feature attention mask's ones). */
  validFrames: number;
  /** Audio tokens it expands to: the encoder's output rows kept for it. */
  audioTokens: number;
  /** Its length in seconds, for the per-prompt limit. */
  seconds: number;
}

/**
 * What rebuilds a processor elsewhere (the media decoding thread): plain data that a
 * structured clone carries, given to audioProcessorFromSpec (audio-processing.ts).
 */
export type AudioProcessorSpec =
  | { family: 'qwen2_audio'; settings: WhisperFeatureSettings; audioTokenId: number }
  | { family: 'ultravox'; settings: WhisperFeatureSettings; placeholder: string; audioTokenId: number; encoderDownsampling: number; stackFactor: number };

export interface AudioProcessor {
  /** The family, for the startup report ("qwen2_audio", "ultravox"). */
  readonly family: string;
  /** The processor as plain data, to run it on another thread. */
  readonly spec: AudioProcessorSpec;
  /** What a chat template writes for an audio part and a /generate prompt carries per audio part. */
  readonly placeholder: string;
  /** The token whose embeddings the audio features replace. */
  readonly audioTokenId: number;
  /**
   * How chat messages reach the template (vLLM's content formats): "parts" for templates
   * that iterate content parts ({"type": "audio"}), "string" for templates that print
   * content as text (the placeholder is then written before the text, once per audio part).
   */
  readonly contentFormat: 'parts' | 'string';
  /** Its log-mel feature extractor (preprocessor_config.json). */
  readonly extractor: WhisperFeatureExtractor;
  /** The longest audio part the model hears, in seconds (its window). */
  readonly maxSeconds: number;
  /** One part's features (the audio at the extractor's sampling rate): ~100 ms of CPU for a 30 s Whisper window. */
  process(audio: DecodedAudio, param: string): ProcessedAudio;
  /**
   * The audio tokens a part of at least `samples` samples (at the extractor's rate) becomes
   * at least, from its length alone: what the part will cost the context, before decoding.
   */
  declaredAudioTokens(samples: number): number;
  /**
   * The text that replaces one placeholder, given the prompt text around it (Qwen2-Audio
   * adds its bos/eos markers unless the placeholder already sits between them).
   */
  expansion(audio: ProcessedAudio, before: string, after: string): string;
}

/** Settings that bound the audio of one prompt (docs/media.md). */
export interface AudioLimits {
  /** Seconds of audio, all parts of a prompt together (MEDIA_MAX_AUDIO_SECONDS_PER_PROMPT). */
  maxAudioSecondsPerPrompt: number;
}

export const DEFAULT_AUDIO_LIMITS: AudioLimits = { maxAudioSecondsPerPrompt: 120 };
