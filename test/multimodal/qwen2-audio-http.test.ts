/**
 * A Qwen2-Audio-style folder (test/fixtures/multimodal/qwen2-audio) served end to end:
 * audio in chat input_audio / audio_url parts and /generate audio_url parts goes through
 * decoding, resampling, the Whisper feature extractor, the audio encoder and the engine's
 * spliced prefill, and the output equals the torch reference of
 * scripts/multimodal/build_audio_fixtures.py.
 */
import { cp, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Hono } from 'hono';
import { encodeOnnxModel, OnnxDataType } from '../../src/graph/onnx-writer.js';
import { parseServerConfig } from '../../src/config/server-config.js';
import type { LocalEngine } from '../../src/engine/local-engine.js';
import { createApp } from '../../src/http/app.js';
import { inlineMediaDecoder, resolveMediaConfig, type MediaDecoder } from '../../src/media/index.js';
import { createNodeMediaFetcher, createWorkerMediaDecoder } from '../../src/media/node.js';
import { createNodeEngine } from '../../src/runtime/node/engine.js';
import { nodeGuideCompiler } from '../../src/runtime/node/guides.js';
import { expectNoStall, withHeartbeat } from '../http/heartbeat.js';
import { expectError, postJson, ssePayloads } from '../http/helpers.js';
import { pcm16Wav } from '../media/helpers/fixtures.js';
import { temporaryFolderCopies } from './fixtures.js';
import { AUDIO_DIR, audioBytes, audioDataUrl, audioFormat, audioReference, QWEN2_AUDIO_DIR, type AudioReferenceGeneration } from './audio-fixtures.js';

const MODEL = 'qwen2-audio';
const expected = audioReference();
let engine: LocalEngine;
let app: Hono;

function mediaApp(config: Parameters<typeof resolveMediaConfig>[0] = {}, decoder?: MediaDecoder): Hono {
  return createApp({
    engine,
    config: parseServerConfig({ modelDir: QWEN2_AUDIO_DIR, servedModelName: MODEL }),
    mediaFetcher: createNodeMediaFetcher(resolveMediaConfig({ mediaDir: AUDIO_DIR, ...config }), decoder === undefined ? undefined : { decoder }),
    guideCompiler: nodeGuideCompiler(engine),
  });
}

beforeAll(async () => {
  engine = await createNodeEngine({ modelDir: QWEN2_AUDIO_DIR, servedModelName: MODEL });
  app = mediaApp();
});
afterAll(async () => {
  await engine?.dispose();
});

/** input_audio parts for WAV, audio_url data: URLs for MP3: both of chat's audio part types. */
function audioPart(name: string) {
  return audioFormat(name) === 'wav'
    ? { type: 'input_audio', input_audio: { data: Buffer.from(audioBytes(name)).toString('base64'), format: 'wav' } }
    : { type: 'audio_url', audio_url: { url: audioDataUrl(name) } };
}

function chatBody(generation: AudioReferenceGeneration, extra: Record<string, unknown> = {}) {
  const content = [...generation.audio.map(audioPart), { type: 'text', text: generation.question }];
  return { model: MODEL, messages: [{ role: 'user', content }], max_tokens: generation.max_tokens, temperature: 0, ...extra };
}

async function chat(target: Hono, body: unknown) {
  const res = await postJson(target, '/v1/chat/completions', body);
  if (res.status !== 200) throw new Error(`status ${res.status}: ${await res.text()}`);
  return (await res.json()) as {
    choices: Array<{ message: { content: string }; logprobs: { content: Array<{ top_logprobs: Array<{ logprob: number }> }> } | null }>;
    usage: { prompt_tokens: number };
    prompt_logprobs?: Array<Record<string, { logprob: number }> | null>;
  };
}

const chats = expected.generations.filter((generation) => generation.kind === 'chat');

describe('Qwen2-Audio folder', () => {
  it('loads as an audio-language model that takes audio', () => {
    expect(engine.info.acceptedMedia).toEqual(['audio']);
    expect(engine.loadReport.audio).toBe('qwen2_audio audio processor (Whisper log-mel), onnx/audio_encoder.onnx');
  });

  it('chat with input_audio and audio_url parts: greedy output, prompt length and first-token logprobs equal the reference', async () => {
    for (const generation of chats) {
      const body = await chat(app, chatBody(generation, { logprobs: true, top_logprobs: 5 }));
      expect(body.choices[0].message.content).toBe(generation.text);
      expect(body.usage.prompt_tokens).toBe(generation.prompt_token_ids.length);
      const top = body.choices[0].logprobs!.content[0].top_logprobs;
      generation.top_logprobs.forEach((entry, rank) => expect(top[rank].logprob).toBeCloseTo(entry.logprob, 3));
    }
  });

  it("the expanded prompt's token ids follow Qwen2-Audio's rule exactly", async () => {
    const generation = chats.find((entry) => entry.audio.length === 2)!;
    const body = await chat(app, chatBody(generation, { prompt_logprobs: 0, max_tokens: 1 }));
    const ids = body.prompt_logprobs!.map((entry, index) => (index === 0 ? generation.prompt_token_ids[0] : Number(Object.keys(entry!)[0])));
    expect(ids).toEqual(generation.prompt_token_ids);
    const tok = engine.tokenizer;
    const count = (token: string) => ids.filter((id) => id === tok.tokenToId(token)).length;
    const tokens = generation.audio.map((name) => expected.audio[name].audio_tokens);
    expect(count('<|AUDIO|>')).toBe(tokens[0] + tokens[1]);
    expect(count('<|audio_bos|>')).toBe(2);
    expect(count('<|audio_eos|>')).toBe(2);
    // "Audio 1: <|audio_bos|><|AUDIO|> × n<|audio_eos|>\n" as the chat template writes it.
    const text = tok.decode(ids, { skipSpecialTokens: false });
    expect(text).toContain(`Audio 1: <|audio_bos|>${'<|AUDIO|>'.repeat(tokens[0])}<|audio_eos|>\nAudio 2: <|audio_bos|>`);
  });

  it('different audio gives different outputs', () => {
    const texts = chats.filter((generation) => generation.audio.length === 1).map((generation) => generation.text);
    expect(new Set(texts).size).toBe(texts.length);
  });

  it('/generate with a data: URL or a MEDIA_DIR file audio part equals the reference of the same prompt', async () => {
    const generation = expected.generations.find((entry) => entry.kind === 'generate')!;
    const [before, after] = generation.prompt_text.split('<|AUDIO|>');
    for (const reference of [audioDataUrl(generation.audio[0]), generation.audio[0], join(AUDIO_DIR, generation.audio[0])]) {
      const res = await postJson(app, '/generate', {
        prompt: [
          { type: 'text', text: before },
          { type: 'audio_url', audio_url: reference },
          { type: 'text', text: after },
        ],
        max_tokens: generation.max_tokens,
        temperature: 0,
      });
      expect(res.status).toBe(200);
      // The prompt echoed as written (the audio part as its placeholder), then the reference's tokens.
      expect(((await res.json()) as { text: string[] }).text).toEqual([generation.prompt_text + generation.text]);
    }
  });

  it('a batch mixing text-only and audio requests equals each alone, streamed or not', async () => {
    const solo: string[] = [];
    for (const generation of chats) solo.push((await chat(app, chatBody(generation))).choices[0].message.content);
    const together = await Promise.all(
      chats.map(async (generation, index) => {
        if (index % 2 === 0) return (await chat(app, chatBody(generation))).choices[0].message.content;
        const res = await postJson(app, '/v1/chat/completions', chatBody(generation, { stream: true }));
        const chunks = ssePayloads(await res.text()).filter((payload) => payload !== '[DONE]');
        return chunks.map((chunk) => (JSON.parse(chunk) as { choices: Array<{ delta: { content?: string } }> }).choices[0]?.delta.content ?? '').join('');
      }),
    );
    expect(together).toEqual(solo);
    expect(solo).toEqual(chats.map((generation) => generation.text));
  });

  it('n, beam search and structured output take an audio prompt like a text one', async () => {
    const generation = chats[0];
    const sampled = await chat(app, chatBody(generation, { n: 2, temperature: 1, seed: 7 }));
    expect(sampled.choices).toHaveLength(2);
    expect(sampled.usage.prompt_tokens).toBe(generation.prompt_token_ids.length);
    const beams = await chat(app, chatBody(generation, { use_beam_search: true, n: 2, max_tokens: 4 }));
    expect(beams.choices[0].message.content.length).toBeGreaterThan(0);
    const guided = await chat(app, chatBody(generation, { guided_choice: ['glass', 'bell'], max_tokens: 8 }));
    expect(['glass', 'bell']).toContain(guided.choices[0].message.content);
  });

  it('a client that disconnects mid-stream stops its generation', async () => {
    const controller = new AbortController();
    const res = await postJson(app, '/v1/chat/completions', chatBody(chats[0], { stream: true, max_tokens: 300, min_tokens: 300 }), {
      signal: controller.signal,
    });
    const reader = res.body!.getReader();
    await reader.read();
    controller.abort();
    await reader.cancel().catch(() => undefined);
    for (let i = 0; i < 100 && engine.stats().running > 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(engine.stats().running).toBe(0);
  });

  it("a request's most audio (16 parts, each a full window of features) is extracted on the media thread: the loop is held no longer than a slice, and the output equals the inline path's", async () => {
    // Qwen2-Audio pads every part to its window: 16 short parts cost 16 windows of features
    // (MEDIA_MAX_PARTS) yet fit the context (12 audio tokens each).
    const tone = (index: number) => pcm16Wav([Int16Array.from({ length: 8000 }, (_, i) => Math.round(8000 * Math.sin(i * 0.01 * (index + 1))))], 16000);
    const parts = Array.from({ length: 16 }, (_, index) => ({ type: 'input_audio', input_audio: { data: Buffer.from(tone(index)).toString('base64'), format: 'wav' } }));
    const body = { model: MODEL, messages: [{ role: 'user', content: [...parts, { type: 'text', text: 'all of them' }] }], max_tokens: 6, temperature: 0, logprobs: true };
    const thread = createWorkerMediaDecoder({ timeoutMs: 20_000 });
    const tasks: string[] = [];
    const counting: MediaDecoder = {
      decode: (media, options) => thread.decode(media, options),
      runTask: (task, signal) => {
        tasks.push(task.name);
        return thread.runTask!(task, signal);
      },
    };
    try {
      const { result, report } = await withHeartbeat(mediaApp({}, counting), (live) => chat(mediaApp({}, counting), body).then((answer) => ({ answer, tokens: live.tokens })), { model: MODEL });
      expect(tasks).toEqual(['process-audio']);
      expectNoStall(report, 400);
      const inline = await chat(mediaApp({}, inlineMediaDecoder), body);
      expect(result.answer.choices[0].message.content).toBe(inline.choices[0].message.content);
      expect(result.answer.choices[0].logprobs).toEqual(inline.choices[0].logprobs);
      expect(result.answer.usage.prompt_tokens).toBe(inline.usage.prompt_tokens);
      expect(inline.usage.prompt_tokens).toBeGreaterThan(16 * 14);
    } finally {
      await thread.close();
    }
  });

  it('audio seconds per prompt are bounded by MEDIA_MAX_AUDIO_SECONDS_PER_PROMPT: a 400 naming the part', async () => {
    const strict = mediaApp({ maxAudioSecondsPerPrompt: 3 });
    const body = {
      model: MODEL,
      messages: [{ role: 'user', content: [audioPart('other-16k.wav'), audioPart('tone-22k.wav'), { type: 'text', text: 'both' }] }],
    };
    // other-16k.wav lasts 2.4 s, tone-22k.wav 1.4 s: the second part crosses 3 s.
    const message = await expectError(postJson(strict, '/v1/chat/completions', body), 400, 'BadRequestError', 'messages[0].content[1].input_audio.data');
    expect(message).toMatch(/3\.7 s up to this part, more than the 3 s a prompt may carry \(MEDIA_MAX_AUDIO_SECONDS_PER_PROMPT\)/);
  });

  it("audio longer than the model's window is a 400 naming the part, not silently cut", async () => {
    const long = pcm16Wav([new Int16Array(16000 * 5).fill(1000)], 16000);
    const message = await expectError(
      postJson(app, '/generate', {
        prompt: [{ type: 'text', text: 'hear:' }, { type: 'audio_url', audio_url: `data:audio/wav;base64,${Buffer.from(long).toString('base64')}` }],
        max_tokens: 2,
      }),
      400,
      'BadRequestError',
      'prompt[1].audio_url',
    );
    expect(message).toMatch(/lasts 5\.0 s; this model hears at most 4 s per audio part/);
  });

  it('audio too short to give an audio token is a 400 naming the part', async () => {
    const blip = pcm16Wav([new Int16Array(300).fill(500)], 16000);
    const message = await expectError(
      postJson(app, '/v1/chat/completions', {
        model: MODEL,
        messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: Buffer.from(blip).toString('base64'), format: 'wav' } }] }],
      }),
      400,
      'BadRequestError',
      'messages[0].content[0].input_audio.data',
    );
    expect(message).toMatch(/too short/);
  });

  it('audio tokens count towards the context: WAV audio that does not fit is a 400 from its headers, before decoding or features', async () => {
    const parts = Array.from({ length: 12 }, () => audioPart('other-16k.wav'));
    let work = 0;
    const thread = createWorkerMediaDecoder({ timeoutMs: 20_000 });
    const counting: MediaDecoder = {
      decode: (media, options) => ((work += 1), thread.decode(media, options)),
      runTask: (task, signal) => ((work += 1), thread.runTask!(task, signal)),
    };
    try {
      const message = await expectError(
        postJson(mediaApp({}, counting), '/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: [...parts, { type: 'text', text: 'all' }] }] }),
        400,
        'BadRequestError',
        'messages',
      );
      expect(message).toMatch(/maximum context length is 512 tokens\. However, you requested at least \d+ tokens/);
      expect(work, 'parts decoded or processed').toBe(0);
    } finally {
      await thread.close();
    }
    // An MP3's declared duration is not exact: it is judged after decoding, as before.
    const mp3s = Array.from({ length: 12 }, () => audioPart('chirp-44k.mp3'));
    const mp3 = await expectError(postJson(app, '/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: [...mp3s, { type: 'text', text: 'all' }] }] }), 400, 'BadRequestError', 'messages');
    expect(mp3).toMatch(/512/);
  });

  it("the audio tokens counted from a WAV's header are never more than its features give", async () => {
    for (const name of ['tone-22k.wav', 'other-16k.wav']) {
      const seconds = expected.audio[name].source_samples / expected.audio[name].source_rate;
      expect(engine.audio!.declaredPromptTokens([{ seconds }])).toBeLessThanOrEqual(expected.audio[name].audio_tokens);
      expect(engine.audio!.declaredPromptTokens([{ seconds }])).toBeGreaterThanOrEqual(expected.audio[name].audio_tokens - 1);
    }
  });

  it('a prompt that spells <|AUDIO|> itself is a 400', async () => {
    await expectError(
      postJson(app, '/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: 'listen: <|AUDIO|>' }] }),
      400,
      'BadRequestError',
      'messages',
    );
    await expectError(postJson(app, '/v1/completions', { model: MODEL, prompt: 'listen: <|AUDIO|>', max_tokens: 2 }), 400, 'BadRequestError');
  });

  it('image parts are refused by a model that takes audio only', async () => {
    const png = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC';
    const res = await postJson(app, '/v1/chat/completions', {
      model: MODEL,
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: png } }, { type: 'text', text: 'x' }] }],
    });
    expect(res.status).toBe(400);
  });
});

describe('audio-language folders the engine cannot serve are refused at startup', () => {
  const copyOf = temporaryFolderCopies('alm-');
  const copy = () => copyOf(QWEN2_AUDIO_DIR);

  it('an audio encoder that needs an input the engine does not feed, by name', async () => {
    const dir = await copy();
    const graph = encodeOnnxModel({
      irVersion: 8,
      opsetVersion: 17,
      producerName: 'test',
      producerVersion: '0',
      graph: {
        name: 'audio',
        nodes: [{ opType: 'Identity', name: 'id', inputs: ['input_features'], outputs: ['audio_features'] }],
        initializers: [],
        inputs: [
          { name: 'input_features', elemType: OnnxDataType.FLOAT, shape: ['b', 64, 400] },
          { name: 'speaker_ids', elemType: OnnxDataType.INT64, shape: ['b'] },
        ],
        outputs: [{ name: 'audio_features', elemType: OnnxDataType.FLOAT, shape: ['b', 64, 400] }],
      },
    });
    await writeFile(join(dir, 'onnx', 'audio_encoder.onnx'), graph);
    await expect(createNodeEngine({ modelDir: dir })).rejects.toThrow(/audio_encoder\.onnx cannot be served: it requires "speaker_ids"/);
  });

  it('an audio encoder whose mel bins differ from feature_size', async () => {
    const dir = await copy();
    const config = JSON.parse(await readFile(join(dir, 'preprocessor_config.json'), 'utf8')) as Record<string, unknown>;
    await writeFile(join(dir, 'preprocessor_config.json'), JSON.stringify({ ...config, feature_size: 80 }));
    await expect(createNodeEngine({ modelDir: dir })).rejects.toThrow(/takes 64 mel bins, but preprocessor_config\.json's feature_size is 80/);
  });

  it('an audio encoder beside a decoder that takes input_ids: features would have nowhere to go', async () => {
    const dir = await copyOf('models/stories260k');
    await cp(join(QWEN2_AUDIO_DIR, 'onnx', 'audio_encoder.onnx'), join(dir, 'onnx', 'audio_encoder.onnx'));
    await expect(createNodeEngine({ modelDir: dir })).rejects.toThrow(/audio_encoder\.onnx is present, but .* takes input_ids, so audio features have nowhere to go/);
  });

  it('a model_type without an audio processor here', async () => {
    const dir = await copy();
    const config = JSON.parse(await readFile(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
    await writeFile(join(dir, 'config.json'), JSON.stringify({ ...config, model_type: 'whisper' }));
    await expect(createNodeEngine({ modelDir: dir })).rejects.toThrow(/model_type "whisper" has no audio processor here \(supported: qwen2_audio, ultravox\)/);
  });
});
