import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/engine/types.js';
import { MODEL, expectError, golden, loadEngine, postJson, ssePayloads, testApp } from './helpers.js';

let engine: Engine;
beforeAll(async () => {
  engine = await loadEngine();
});
afterAll(() => engine.dispose());

const greedy = { prompt: golden.prompt, temperature: 0, max_tokens: 100 };

describe('POST /generate, non-streaming', () => {
  it('returns {"text": [prompt + continuation]} with the golden greedy continuation', async () => {
    const response = await postJson(testApp(engine), '/generate', greedy);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await response.json()).toEqual({ text: [golden.prompt + golden.completion_text] });
  });

  it('accepts the spec example\'s null fields and "model": "None"', async () => {
    const response = await postJson(testApp(engine), '/generate', {
      ...greedy,
      max_tokens: 10,
      seed: null,
      stop: null,
      stop_token_ids: null,
      best_of: null,
      n: null,
      model: 'None',
      include_stop_str_in_output: false,
      skip_special_tokens: true,
      ignore_eos: false,
    });
    expect(response.status).toBe(200);
    const { text } = (await response.json()) as { text: string[] };
    expect(golden.prompt + golden.completion_text).toContain(text[0]);
  });

  it('stops before a stop string that spans several tokens, and keeps it when asked', async () => {
    // " girl" is the tokens " g", "ir", "l" in the golden output.
    const stopped = await postJson(testApp(engine), '/generate', { ...greedy, stop: [' girl'] });
    expect(await stopped.json()).toEqual({ text: [`${golden.prompt}, there was a little`] });
    const kept = await postJson(testApp(engine), '/generate', { ...greedy, stop: ' girl', include_stop_str_in_output: true });
    expect(await kept.json()).toEqual({ text: [`${golden.prompt}, there was a little girl`] });
  });

  it('caps the output at maxIterTimes from the server config', async () => {
    const app = testApp(engine, { maxIterTimes: 3 });
    const response = await postJson(app, '/generate', { prompt: golden.prompt, temperature: 0 });
    // The first three golden tokens: ",", " there", " was".
    expect(await response.json()).toEqual({ text: [`${golden.prompt}, there was`] });
  });

  it('joins a prompt list made of text parts only', async () => {
    const whole = await postJson(testApp(engine), '/generate', { prompt: 'Once upon\na time', temperature: 0, max_tokens: 8 });
    const parts = await postJson(testApp(engine), '/generate', {
      prompt: [
        { type: 'text', text: 'Once upon' },
        { type: 'text', text: 'a time' },
      ],
      temperature: 0,
      max_tokens: 8,
    });
    expect(parts.status).toBe(200);
    expect(await parts.json()).toEqual(await whole.json());
  });
});

describe('POST /generate, streaming', () => {
  it('sends one SSE event per step with the new text, and ends the body without a marker', async () => {
    const response = await postJson(testApp(engine), '/generate', { ...greedy, stream: true });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const payloads = ssePayloads(await response.text());
    const texts = payloads.map((payload) => {
      const event = JSON.parse(payload) as { text: string[] };
      expect(Object.keys(event)).toEqual(['text']);
      expect(event.text).toHaveLength(1);
      expect(event.text[0]).not.toBe('');
      return event.text[0]!;
    });
    expect(texts.join('')).toBe(golden.completion_text);
    expect(texts.slice(0, 3)).toEqual([',', ' there', ' was']);
    // At most one event per generated token.
    expect(texts.length).toBeLessThanOrEqual(golden.completion_ids.length);
    expect(texts.length).toBeGreaterThan(golden.completion_ids.length / 2);
  });

  it('with fullTextEnabled, each event carries all the text generated so far (no prompt)', async () => {
    const app = testApp(engine, { fullTextEnabled: true });
    const raw = await (await postJson(app, '/generate', { ...greedy, stream: true })).text();
    const texts = ssePayloads(raw).map((payload) => (JSON.parse(payload) as { text: string[] }).text[0]!);
    expect(texts[0]).toBe(',');
    expect(texts[1]).toBe(', there');
    for (let i = 1; i < texts.length; i++) {
      expect(texts[i]!.startsWith(texts[i - 1]!)).toBe(true);
      expect(texts[i]!.length).toBeGreaterThan(texts[i - 1]!.length);
    }
    expect(texts.at(-1)).toBe(golden.completion_text);
  });

  it('never streams part of a stop string that spans tokens', async () => {
    const raw = await (await postJson(testApp(engine), '/generate', { ...greedy, stream: true, stop: [' girl'] })).text();
    const texts = ssePayloads(raw).map((payload) => (JSON.parse(payload) as { text: string[] }).text[0]!);
    // Text once sent cannot be taken back: the concatenation is exactly what precedes " girl".
    expect(texts.join('')).toBe(', there was a little');
  });
});

describe('POST /generate, refusals', () => {
  it('refuses n > 1 with greedy decoding, and best_of > n when streaming', async () => {
    const greedyN = await expectError(postJson(testApp(engine), '/generate', { ...greedy, n: 2 }), 400, 'BadRequestError', 'temperature');
    expect(greedyN).toMatch(/temperature must be greater than 0/);
    const body = { ...greedy, temperature: 1, best_of: 2, stream: true };
    const streamed = await expectError(postJson(testApp(engine), '/generate', body), 400, 'BadRequestError', 'best_of');
    expect(streamed).toMatch(/best_of must equal n when streaming/);
  });

  it('reads an image part\'s header, then refuses it undecoded because the model is text-only', async () => {
    // A 1×1 red PNG (8-bit RGB): signature, IHDR, IDAT (zlib of the row 00 ff 00 00), IEND.
    const png =
      'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC';
    const message = await expectError(
      postJson(testApp(engine), '/generate', {
        prompt: [
          { type: 'text', text: 'Describe' },
          { type: 'image_url', image_url: `data:image/png;base64,${png}` },
        ],
      }),
      400,
      'BadRequestError',
      'prompt[1].image_url',
    );
    expect(message).toBe('prompt[1].image_url: this model accepts text only; the image was fetched and its header checked (not decoded), but the model cannot use it');
  });

  it('refuses a local media path where this app has no local files (the default fetcher)', async () => {
    const message = await expectError(
      postJson(testApp(engine), '/generate', {
        prompt: [
          { type: 'text', text: 'Describe' },
          { type: 'image_url', image_url: '/data/multimodal_inputs/cat.png' },
        ],
      }),
      400,
      'BadRequestError',
      'prompt[1].image_url',
    );
    expect(message).toMatch(/^prompt\[1\]\.image_url: local media files cannot be read in this runtime/);
  });

  it('refuses an unknown LoRA adapter with 404', async () => {
    const message = await expectError(postJson(testApp(engine), '/generate', { ...greedy, model: 'my-lora' }), 404, 'NotFoundError');
    expect(message).toBe('The model `my-lora` does not exist.');
  });

  it('accepts the served model name as `model`', async () => {
    const response = await postJson(testApp(engine), '/generate', { ...greedy, max_tokens: 2, model: MODEL });
    expect(response.status).toBe(200);
  });

  it('refuses a prompt longer than maxInputTokenLen', async () => {
    const app = testApp(engine, { maxInputTokenLen: 4 });
    // "Once upon a time" is 5 tokens with BOS.
    const message = await expectError(postJson(app, '/generate', greedy), 400, 'BadRequestError', 'prompt');
    expect(message).toMatch(/5 tokens/);
  });

  it('refuses out-of-range sampling values with the parameter named', async () => {
    await expectError(postJson(testApp(engine), '/generate', { ...greedy, top_p: 0 }), 400, 'BadRequestError', 'top_p');
    await expectError(postJson(testApp(engine), '/generate', { ...greedy, repetition_penalty: 2.5 }), 400, 'BadRequestError', 'repetition_penalty');
    await expectError(postJson(testApp(engine), '/generate', { ...greedy, max_tokens: 0 }), 400, 'BadRequestError', 'max_tokens');
    await expectError(postJson(testApp(engine), '/generate', { ...greedy, stream: 'yes' }), 400, 'BadRequestError', 'stream');
    await expectError(postJson(testApp(engine), '/generate', { temperature: 0 }), 400, 'BadRequestError', 'prompt');
  });
});
