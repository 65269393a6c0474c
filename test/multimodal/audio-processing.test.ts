/**
 * An audio model's feature extraction on the media decoding thread (src/multimodal/
 * audio-processing.ts through MediaDecoder.runTask): the same features and audio tokens as
 * extracting here (which test/multimodal/audio-processors.test.ts checks against the torch
 * reference), the refusals crossing back as MultimodalRequestError with their parameter,
 * the decode deadline applying, and the event loop free meanwhile.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { decodeAudio } from '../../src/media/decode/audio.js';
import { createWorkerMediaDecoder } from '../../src/media/node-decode-worker.js';
import type { DecodedAudio } from '../../src/media/index.js';
import { processAudio } from '../../src/multimodal/audio-processing.js';
import type { AudioProcessor, PromptAudio } from '../../src/multimodal/audio/types.js';
import { Qwen2AudioProcessor } from '../../src/multimodal/processors/qwen2-audio.js';
import { UltravoxProcessor } from '../../src/multimodal/processors/ultravox.js';
import { MultimodalRequestError } from '../../src/multimodal/types.js';
import { maxLoopLag } from '../media/helpers/loop-lag.js';
import { AUDIO_NAMES, audioBytes, audioFormat, markerTokenToId, QWEN2_AUDIO_DIR, referenceFeatures } from './audio-fixtures.js';
import { FIXTURES, readJson } from './fixtures.js';

const decoder = createWorkerMediaDecoder({ timeoutMs: 20_000 });
afterAll(() => decoder.close());

const tokenToId = markerTokenToId;
const qwen2 = Qwen2AudioProcessor.create({ config: {}, preprocessorConfig: readJson(join(QWEN2_AUDIO_DIR, 'preprocessor_config.json')) }, tokenToId);
const ultravoxDir = join(FIXTURES, 'ultravox');
const ultravox = UltravoxProcessor.create(
  {
    config: {},
    preprocessorConfig: readJson(join(ultravoxDir, 'preprocessor_config.json')),
    processorConfig: readJson(join(ultravoxDir, 'processor_config.json')),
  },
  tokenToId,
);
// Qwen2-Audio-7B's own settings: 128 mel bins, every part padded to a 30 s window (3000 frames).
const qwen2Full = Qwen2AudioProcessor.create({ config: {}, preprocessorConfig: { feature_size: 128, chunk_length: 30, sampling_rate: 16000 } }, tokenToId);

/** The fixture files decoded at 16 kHz, plus one at 22.05 kHz that the processor resamples itself; fresh copies (moving samples to the thread spends them). */
async function fixtureParts(): Promise<PromptAudio[]> {
  const parts = await Promise.all(
    AUDIO_NAMES.map(async (name, index) => ({
      param: `messages[0].content[${index}]`,
      audio: await decodeAudio(audioBytes(name), audioFormat(name), { sampleRate: 16000, maxSeconds: 60 }),
    })),
  );
  const tone = Float32Array.from({ length: 22050 }, (_, i) => Math.sin(i * 0.05) * 0.3);
  return [...parts, { param: 'prompt[3].audio_url', audio: { kind: 'audio', sampleRate: 22050, samples: tone, sourceSampleRate: 22050 } }];
}

function noise(seconds: number, seed: number): DecodedAudio {
  const samples = new Float32Array(Math.round(seconds * 16000));
  let state = seed;
  for (let i = 0; i < samples.length; i++) {
    state = (state * 1103515245 + 12345) >>> 0;
    samples[i] = (state / 2 ** 32 - 0.5) * 0.5;
  }
  return { kind: 'audio', sampleRate: 16000, samples, sourceSampleRate: 16000 };
}

/** Counts the parts `processor` extracts on this thread. */
function counted(processor: AudioProcessor): { processor: AudioProcessor; calls: () => number } {
  let calls = 0;
  const spied = Object.create(processor) as AudioProcessor;
  spied.process = (audio, param) => {
    calls += 1;
    return processor.process(audio, param);
  };
  return { processor: spied, calls: () => calls };
}

describe('audio features on the media thread', () => {
  it('equal the features extracted here, for both families, resampling included; and the torch reference', async () => {
    for (const processor of [qwen2, ultravox]) {
      const here = await processAudio(processor, await fixtureParts());
      const there = await processAudio(processor, await fixtureParts(), decoder);
      expect(there).toHaveLength(4);
      expect(there).toEqual(here);
      expect(there[0].features).toBeInstanceOf(Float32Array);
    }
    const [first] = await processAudio(qwen2, await fixtureParts(), decoder);
    const reference = referenceFeatures(AUDIO_NAMES[0]);
    let difference = 0;
    for (let i = 0; i < reference.length; i++) difference = Math.max(difference, Math.abs(first.features[i] - reference[i]));
    expect(difference).toBeLessThan(2e-4);
  });

  it("a part's tokens from its length alone (before decoding) are never more than its features give, for both families", async () => {
    for (const processor of [qwen2, ultravox, qwen2Full]) {
      const { hopLength, nSamples } = processor.extractor.settings;
      for (const samples of [hopLength * 2 + 1, 1000, 16_000, 16_001, 33_333, nSamples - 1, nSamples, nSamples + 5000]) {
        const [processed] = await processAudio(processor, [{ param: 'p', audio: { kind: 'audio', sampleRate: 16000, samples: new Float32Array(samples).fill(0.1), sourceSampleRate: 16000 } }]);
        expect(processor.declaredAudioTokens(samples), `${processor.family} ${samples}`).toBe(processed.audioTokens);
        expect(processor.declaredAudioTokens(samples - hopLength)).toBeLessThanOrEqual(processed.audioTokens);
      }
    }
  });

  it('audio too short for an audio token comes back as MultimodalRequestError naming the part', async () => {
    const blip: PromptAudio = { param: 'prompt[2].audio_url', audio: { kind: 'audio', sampleRate: 16000, samples: new Float32Array(150), sourceSampleRate: 16000 } };
    const failure = processAudio(qwen2, [blip], decoder);
    await expect(failure).rejects.toBeInstanceOf(MultimodalRequestError);
    await expect(failure).rejects.toMatchObject({ param: 'prompt[2].audio_url', message: expect.stringMatching(/too short/) });
  });

  it("keeps the event loop free while a request's most audio (16 parts, 30 s Whisper windows) is extracted there", async () => {
    const parts = Array.from({ length: 16 }, (_, index) => ({ param: `p${index}`, audio: noise(30, index + 1) }));
    const { processor, calls } = counted(qwen2Full);
    let frames = 0;
    const lag = await maxLoopLag(async () => {
      const processed = await processAudio(processor, parts, decoder);
      frames = processed.reduce((sum, part) => sum + part.frames, 0);
    });
    expect(frames).toBe(16 * 3000);
    expect(calls(), 'parts extracted on the event loop').toBe(0);
    expect(lag, 'event-loop lag (ms)').toBeLessThan(250);
  });

  it('without a thread (workerd, a page), one part at a time with the loop free between parts', async () => {
    const parts = Array.from({ length: 4 }, (_, index) => ({ param: `p${index}`, audio: noise(30, index + 1) }));
    const { processor, calls } = counted(qwen2Full);
    let ticks = 0;
    const timer = setInterval(() => (ticks += 1), 0);
    try {
      await processAudio(processor, parts);
    } finally {
      clearInterval(timer);
    }
    expect(calls()).toBe(4);
    // A timer ran between parts: not one synchronous pass over the four.
    expect(ticks).toBeGreaterThanOrEqual(3);
  });

  it('runs under the decode deadline (MEDIA_DECODE_TIMEOUT_MS); the next job still runs', async () => {
    const hurried = createWorkerMediaDecoder({ timeoutMs: 20 });
    try {
      const parts = Array.from({ length: 16 }, (_, index) => ({ param: `p${index}`, audio: noise(30, index + 1) }));
      await expect(processAudio(qwen2Full, parts, hurried)).rejects.toMatchObject({
        reason: 'timeout',
        message: expect.stringMatching(/processing the audio took longer than 20 ms \(MEDIA_DECODE_TIMEOUT_MS\)/),
      });
    } finally {
      await hurried.close();
    }
    const [processed] = await processAudio(qwen2, [{ param: 'p', audio: noise(1, 3) }], decoder);
    expect(processed.audioTokens).toBe(25);
  });
});
