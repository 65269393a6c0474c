/**
 * The second audio family (Ultravox, as transformers.js runs onnx-community's exports):
 * unpadded features into audio_values, <|audio|> × 1 + ceil(round(samples / 320) / 8),
 * and a template that prints content as text, so chat audio parts arrive as a
 * placeholder line before the text (vLLM's "string" content format). Against the torch
 * reference of scripts/multimodal/build_audio_fixtures.py.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Hono } from 'hono';
import { parseServerConfig } from '../../src/config/server-config.js';
import type { LocalEngine } from '../../src/engine/local-engine.js';
import { createApp } from '../../src/http/app.js';
import { createNodeEngine } from '../../src/runtime/node/engine.js';
import { postJson } from '../http/helpers.js';
import { audioBytes, audioDataUrl, type AudioReferenceGeneration } from './audio-fixtures.js';
import { FIXTURES } from './fixtures.js';

const DIR = join(FIXTURES, 'ultravox');
const MODEL = 'ultravox';
const expected = JSON.parse(readFileSync(join(FIXTURES, 'ultravox-reference.json'), 'utf8')) as {
  audio: Record<string, { samples: number; frames: number; audio_tokens: number }>;
  generations: AudioReferenceGeneration[];
};
let engine: LocalEngine;
let app: Hono;

beforeAll(async () => {
  engine = await createNodeEngine({ modelDir: DIR, servedModelName: MODEL });
  app = createApp({ engine, config: parseServerConfig({ modelDir: DIR, servedModelName: MODEL }) });
});
afterAll(async () => {
  await engine?.dispose();
});

describe('Ultravox folder', () => {
  it('chat with audio parts equals the reference, the placeholder line written before the text', async () => {
    const outputs: string[] = [];
    for (const generation of expected.generations.filter((entry) => entry.kind === 'chat')) {
      const parts = generation.audio.map((name) =>
        name.endsWith('.wav')
          ? { type: 'input_audio', input_audio: { data: Buffer.from(audioBytes(name)).toString('base64'), format: 'wav' } }
          : { type: 'audio_url', audio_url: { url: audioDataUrl(name) } },
      );
      const res = await postJson(app, '/v1/chat/completions', {
        model: MODEL,
        messages: [{ role: 'user', content: [...parts, { type: 'text', text: generation.question }] }],
        max_tokens: generation.max_tokens,
        temperature: 0,
      });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { choices: Array<{ message: { content: string } }>; usage: { prompt_tokens: number } };
      expect(body.choices[0].message.content).toBe(generation.text);
      expect(body.usage.prompt_tokens).toBe(generation.prompt_token_ids.length);
      const audioId = engine.tokenizer.tokenToId('<|audio|>')!;
      const tokens = generation.audio.reduce((sum, name) => sum + expected.audio[name].audio_tokens, 0);
      expect(generation.prompt_token_ids.filter((id) => id === audioId)).toHaveLength(tokens);
      outputs.push(body.choices[0].message.content);
    }
    expect(new Set(outputs).size).toBe(outputs.length);
  });

  it('/generate with an audio_url part equals the reference', async () => {
    const generation = expected.generations.find((entry) => entry.kind === 'generate')!;
    const [before, after] = generation.prompt_text.split('<|audio|>');
    const res = await postJson(app, '/generate', {
      prompt: [
        { type: 'text', text: before },
        { type: 'audio_url', audio_url: audioDataUrl(generation.audio[0]) },
        { type: 'text', text: after },
      ],
      max_tokens: generation.max_tokens,
      temperature: 0,
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { text: string[] }).text).toEqual([generation.prompt_text + generation.text]);
  });

  it("a placeholder the user wrote in the text is the audio's place (vLLM), not an extra one", async () => {
    const generation = expected.generations[0];
    const res = await postJson(app, '/v1/chat/completions', {
      model: MODEL,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: `<|audio|>\n${generation.question}` },
            { type: 'input_audio', input_audio: { data: Buffer.from(audioBytes(generation.audio[0])).toString('base64'), format: 'wav' } },
          ],
        },
      ],
      max_tokens: generation.max_tokens,
      temperature: 0,
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { choices: Array<{ message: { content: string } }> }).choices[0].message.content).toBe(generation.text);
  });
});
