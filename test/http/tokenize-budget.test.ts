/**
 * Issue 24: tokenizing work one request can buy. 4 MB of spaced prose sent to /tokenize cost
 * seconds of CPU (2.2 s on the embedded 512 vocabulary, 1.7 s on a 32 K one) to report ~1 M
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
import { withPageBounds } from '../../src/config/bound-settings.js';
import { parseServerConfig } from '../../src/config/server-config.js';
import { convertLlama2cTokenizer } from '../../src/convert/llama2c-tokenizer.js';
import { ENCODE_SLICE_CHARS, HfTokenizer } from '../../src/tokenizer/hf-tokenizer.js';
import { createNodeTokenizerThread } from '../../src/tokenizer/node-tokenizer-thread.js';
import { readSentencepiece32kModel } from '../tokenizer/helpers/paths.js';
import { seededRandom } from '../tokenizer/helpers/random-text.js';
import { readSentencepiecePieces, toLlama2cTokenizerBin } from '../tokenizer/helpers/sentencepiece-model.js';
import { expectNoStall, withHeartbeat } from './heartbeat.js';
import { MODEL, MODEL_DIR, expectError, golden, loadEngine, postJson, testApp } from './helpers.js';

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

describe('where the tokenizer has no thread (workerd, the page): a piece it takes in one call is bounded', () => {
  // The 32 K SentencePiece vocabulary falls back to bytes on CJK: the slowest piece measured (~6 µs a character in one BPE call).
  const files32k = convertLlama2cTokenizer(toLlama2cTokenizerBin(readSentencepiecePieces(readSentencepiece32kModel())));
  const sentencepiece32k = HfTokenizer.fromJson(files32k.tokenizerJson, files32k.tokenizerConfig, { keepSource: true });
  const next = seededRandom(5);
  const cjk = (length: number) => Array.from({ length }, () => String.fromCodePoint(0x4e00 + Math.floor(next() * 20000))).join('');
  /** The embedded engine seen with the 32 K vocabulary and a context CJK runs fit in (/tokenize only: nothing is generated). */
  const appWith = (tokenizer: HfTokenizer, config = {}) =>
    testApp(Object.create(engine, { tokenizer: { value: tokenizer }, info: { value: { ...engine.info, maxModelLen: 65_536 } } }) as Engine, config);

  it('a run past maxInlinePieceChars is a 400 naming it, before tokenizing; one within it is served, the loop held a few hundred ms at most', async () => {
    charsEncoded = 0;
    const inline = appWith(counting(sentencepiece32k));
    const message = await expectError(postJson(inline, '/tokenize', { model: MODEL, prompt: `Once upon a time ${cjk(20_000)} the end` }), 400, 'BadRequestError', 'prompt');
    expect(message).toMatch(/a run of up to 200\d\d characters with no place to cut it .* takes at most 16384 \(maxInlinePieceChars\)/);
    expect(charsEncoded).toBe(0);
    const chat = await expectError(postJson(inline, '/tokenize', { model: MODEL, messages: [{ role: 'user', content: cjk(20_000) }] }), 400, 'BadRequestError', 'messages');
    expect(chat).toMatch(/maxInlinePieceChars/);

    const within = `Once upon a time ${cjk(16_000)} the end`;
    const { result, report } = await withHeartbeat(app, async () => {
      const response = await postJson(inline, '/tokenize', { model: MODEL, prompt: within });
      return { status: response.status, body: (await response.json()) as { tokens: number[] } };
    });
    expect(result.status).toBe(200);
    expect(result.body.tokens).toEqual(sentencepiece32k.encode(within));
    console.log(`16 000 CJK characters inline: held ${report.maxBlockedMs.toFixed(0)} ms`);
    expectNoStall(report);
  });

  it('the bound is a setting; a home with a tokenizer thread (Node) sends the run there instead', async () => {
    const prompt = `Once upon a time ${cjk(20_000)} the end`;
    const raised = await postJson(appWith(sentencepiece32k, { maxInlinePieceChars: 32_768 }), '/tokenize', { model: MODEL, prompt });
    expect(raised.status).toBe(200);
    const threaded = Object.create(sentencepiece32k) as HfTokenizer;
    threaded.offLoop = createNodeTokenizerThread(sentencepiece32k.takeSource()!);
    try {
      const response = await postJson(appWith(threaded), '/tokenize', { model: MODEL, prompt });
      expect(response.status).toBe(200);
      expect(((await response.json()) as { tokens: number[] }).tokens).toEqual(sentencepiece32k.encode(prompt));
    } finally {
      await threaded.offLoop.close();
    }
  });

  it("the page's default is maxPromptChars (one user's own tab); workerd's is 16384", () => {
    expect(parseServerConfig({ modelDir: MODEL_DIR }).maxInlinePieceChars).toBe(16_384);
    expect(parseServerConfig(withPageBounds({ modelDir: MODEL_DIR } as Record<string, unknown>)).maxInlinePieceChars).toBe(4 * 1024 * 1024);
    expect(parseServerConfig(withPageBounds({ modelDir: MODEL_DIR, maxPromptChars: 1000 } as Record<string, unknown>)).maxInlinePieceChars).toBe(1000);
    expect(parseServerConfig(withPageBounds({ modelDir: MODEL_DIR, maxInlinePieceChars: 50 } as Record<string, unknown>)).maxInlinePieceChars).toBe(50);
  });
});
