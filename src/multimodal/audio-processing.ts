/**
 * An audio-language model's feature extraction (resampling to the extractor's rate, the
 * Whisper log-mel STFT: ~100 ms of CPU per 30 s window, which Qwen2-Audio pads every part
 * to) off the event loop. Where the media pipeline has a decoding thread
 * (MediaDecoder.runTask, Node) the processor is rebuilt there from its spec and runs under
 * the decode deadline (MEDIA_DECODE_TIMEOUT_MS); elsewhere it runs here, one part at a time
 * with a yield before each, like inline decoding. The features are the same either way.
 */
import { resample } from '../media/decode/resample.js';
import { movableViews, type MediaDecoder, type MediaThreadTask } from '../media/index.js';
import type { AudioProcessor, AudioProcessorSpec, ProcessedAudio, PromptAudio } from './audio/types.js';
import { Qwen2AudioProcessor } from './processors/qwen2-audio.js';
import { UltravoxProcessor } from './processors/ultravox.js';
import { processParts } from './media-thread.js';
import { MultimodalRequestError } from './types.js';

export function audioProcessorFromSpec(spec: AudioProcessorSpec): AudioProcessor {
  return spec.family === 'qwen2_audio' ? Qwen2AudioProcessor.fromSpec(spec) : UltravoxProcessor.fromSpec(spec);
}

/**
 * One part through the processor: the media pipeline decodes audio at
 * MEDIA_AUDIO_SAMPLE_RATE (16 kHz, what Whisper-style encoders take); a model that wants
 * another rate gets a second resampling. Throws MultimodalRequestError for audio too short
 * to give an audio token.
 */
function processOne(processor: AudioProcessor, part: PromptAudio): ProcessedAudio {
  const rate = processor.extractor.settings.samplingRate;
  const audio = part.audio.sampleRate === rate ? part.audio : { ...part.audio, sampleRate: rate, samples: resample(part.audio.samples, part.audio.sampleRate, rate) };
  const shortest = processor.extractor.settings.nFft / 2 + 1;
  const result = audio.samples.length >= shortest ? processor.process(audio, part.param) : null;
  if (result === null || result.audioTokens < 1) {
    throw new MultimodalRequestError(`${part.param}: the audio is too short for this model (it gives no audio tokens).`, part.param);
  }
  return result;
}

interface ProcessAudioPayload {
  spec: AudioProcessorSpec;
  parts: PromptAudio[];
}

/** The decoding thread's side of the 'process-audio' task (media-decode-worker.ts). */
export function runProcessAudioTask(payload: unknown): { result: ProcessedAudio[]; transfer: ArrayBuffer[] } {
  const { spec, parts } = payload as ProcessAudioPayload;
  const processor = audioProcessorFromSpec(spec);
  const result = parts.map((part) => processOne(processor, part));
  return { result, transfer: movableViews(result.map((processed) => processed.features)).transfer };
}

/** The parts with their samples moved to the thread (the caller's copies are spent). */
function movedParts(parts: readonly PromptAudio[]): { parts: PromptAudio[]; transfer: ArrayBuffer[] } {
  const { views, transfer } = movableViews(parts.map((part) => part.audio.samples));
  return { parts: parts.map((part, index) => ({ param: part.param, audio: { ...part.audio, samples: views[index] } })), transfer };
}

/**
 * Every audio part through `processor`, in order. Throws MultimodalRequestError (audio too
 * short), a MediaError 'timeout' past the deadline, or the signal's reason once it aborts.
 */
export function processAudio(
  processor: AudioProcessor,
  parts: readonly PromptAudio[],
  decoder?: MediaDecoder,
  signal?: AbortSignal,
): Promise<ProcessedAudio[]> {
  const task = (): MediaThreadTask => {
    const moved = movedParts(parts);
    const payload: ProcessAudioPayload = { spec: processor.spec, parts: moved.parts };
    return { name: 'process-audio', payload, transfer: moved.transfer, kind: 'audio' };
  };
  return processParts(parts, (part) => processOne(processor, part), task, decoder, signal);
}
