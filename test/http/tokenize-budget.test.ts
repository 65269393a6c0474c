/**
 * Issue 24: tokenizing work one request can buy. 4 MB of spaced prose sent to /tokenize cost
 * seconds of CPU (~2 s on the embedded 512 vocabulary, ~15 s on a 32 K one) to report ~1 M
 * tokens, and truncate_prompt_tokens tokenized the whole text to keep its last k. Now every
 * route's tokenizing follows the context (or k), not the body: refused from the text's
 * length and words before tokenizing, tokenizing stopped past the context, or a truncated
 * prompt read from its end. Judged by tokenizer work (characters handed to encode()), not
 * time; the CPU time of each request is printed for the notes. /health and a running stream
 * keep answering meanwhile (heartbeat.ts), and the server serves normally after.
 */
import { readFileSync } from 'node:fs';
import type { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/engine/types.js';
import { ENCODE_SLICE_CHARS, HfTokenizer } from '../../src/tokenizer/hf-tokenizer.js';
import { expectNoStall, withHeartbeat } from './heartbeat.js';
import { MODEL, expectError, golden, loadEngine, postJson, testApp } from './helpers.js';

let engine: Engine;
let app: Hono;
let counted: Hono;
let charsEncoded = 0;

/** `tokenizer` with every character handed to encode() counted. */
function counting(tokenizer: HfTokenizer): HfTokenizer {
  const spied = Object.create(tokenizer) as HfTokenizer;
  spied.encode = (text, options) => {
    charsEncoded += text.length;
    return tokenizer.encode(text, options);
  };
  return spied;
}

beforeAll(async () => {
  engine = await loadEngine();
  app = testApp(engine);
  counted = testApp(Object.create(engine, { tokenizer: { value: counting(engine.tokenizer as HfTokenizer) } }) as Engine);
});
afterAll(() => engine.dispose());

/** ~4 MB of prose: ~800 K words, ~1 M tokens of the embedded vocabulary. */
const prose = (() => {
  const words = ['the', 'little', 'dog', 'ran', 'far', 'away', 'happy', 'sun'];
  const parts: string[] = [];
  let size = 0;
  for (let i = 0; size < 4_000_000; i++) {
    const word = words[(i * 7 + (i >> 2)) % 8];
    parts.push(word);
    size += word.length + 1;
  }
  return `${parts.join(' ')}.`;
})();
const body = JSON.stringify({ model: MODEL, prompt: prose }); // built once: the client's work

/** Posts under the heartbeat; the characters the tokenizer was handed and the request's CPU time. */
async function measured(path: string, payload: unknown) {
  charsEncoded = 0;
  const { result, report } = await withHeartbeat(app, async () => {
    const before = process.cpuUsage();
    const response = await postJson(counted, path, typeof payload === 'string' ? payload : JSON.stringify(payload));
    const text = await response.text();
    const cpu = process.cpuUsage(before);
    return { status: response.status, text, cpuMs: (cpu.user + cpu.system) / 1000 };
  });
  expectNoStall(report);
  console.log(`${path}: ${result.status}, ${charsEncoded} characters tokenized, ${result.cpuMs.toFixed(0)} ms CPU (with the heartbeat's stream)`);
  return { ...result, chars: charsEncoded };
}

describe('4 MB of prose: the tokenizing work follows the context, not the body', () => {
  it('/tokenize: a 400 from its words before any tokenizing (vLLM would count all ~1 M tokens)', async () => {
    const result = await measured('/tokenize', body);
    expect(result.status).toBe(400);
    expect(result.text).toMatch(/at least \d+ tokens \(judged from its length and words, before tokenizing\), more than the 512 tokens/);
    expect(result.text.length).toBeLessThan(2000);
    expect(result.chars).toBe(0);
  });

  it('/tokenize in its chat form: the same', async () => {
    const result = await measured('/tokenize', { model: MODEL, messages: [{ role: 'user', content: prose }] });
    expect(result.status).toBe(400);
    expect(result.chars).toBe(0);
  });

  it.each([
    ['/v1/completions', { model: MODEL, prompt: prose, max_tokens: 2 }],
    ['/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: prose }], max_tokens: 2 }],
    ['/generate', { prompt: prose, max_tokens: 2 }],
  ])('%s without truncation: a 400 before any tokenizing', async (path, payload) => {
    const result = await measured(path, payload);
    expect(result.status).toBe(400);
    expect(result.chars).toBe(0);
  });

  it.each([
    ['/v1/completions', { model: MODEL, prompt: prose, max_tokens: 8, temperature: 0, truncate_prompt_tokens: 200 }],
    ['/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: prose }], max_tokens: 8, temperature: 0, truncate_prompt_tokens: 200 }],
  ])('%s with truncate_prompt_tokens 200: served from the last slice of the text, as the whole text would be', async (path, payload) => {
    const result = await measured(path, payload);
    expect(result.status, result.text.slice(0, 300)).toBe(200);
    expect((JSON.parse(result.text) as { usage: { prompt_tokens: number } }).usage.prompt_tokens).toBe(200);
    expect(result.chars).toBeLessThanOrEqual(2 * ENCODE_SLICE_CHARS);
  });

  it("truncation's 200 tokens are the whole text's last 200: the same output as sending those ids", async () => {
    const response = await postJson(app, '/v1/completions', { model: MODEL, prompt: prose, max_tokens: 8, temperature: 0, truncate_prompt_tokens: 200 });
    const last = engine.tokenizer.encode(prose.slice(-20_000), { addSpecialTokens: false }).slice(-200);
    const byIds = await postJson(app, '/v1/completions', { model: MODEL, prompt: last, max_tokens: 8, temperature: 0 });
    const text = (res: unknown) => (res as { choices: [{ text: string }] }).choices[0].text;
    expect(text(await response.json())).toBe(text(await byIds.json()));
  });

  it('a byte-level tokenizer behind a 200 K-token context: its length alone would let 4 MB through; its words do not', async () => {
    const dir = new URL('../fixtures/multimodal/smolvlm/', import.meta.url);
    const byteLevel = HfTokenizer.fromJson(JSON.parse(readFileSync(new URL('tokenizer.json', dir), 'utf8')), JSON.parse(readFileSync(new URL('tokenizer_config.json', dir), 'utf8')));
    // 25 bytes a token at most: 4 MB is "at least 160 K tokens" from its length, within 200 K.
    expect(byteLevel.minTokenCount(prose)).toBeLessThan(200_000);
    charsEncoded = 0;
    const wide = testApp(Object.create(engine, { tokenizer: { value: counting(byteLevel) }, info: { value: { ...engine.info, maxModelLen: 200_000 } } }) as Engine);
    const message = await expectError(postJson(wide, '/tokenize', body), 400, 'BadRequestError', 'prompt');
    expect(message).toMatch(/at least 200001 tokens \(judged from its length and words/);
    expect(charsEncoded).toBe(0);
  });

  it('the server serves normally after', async () => {
    const response = await postJson(app, '/v1/completions', { model: MODEL, prompt: golden.prompt, temperature: 0, max_tokens: 100 });
    expect(response.status).toBe(200);
    expect((await response.json()).choices[0].text).toBe(golden.completion_text);
  });
});
