/**
 * Issue 24's families, as a hostile client sends them: each is a fast 4xx in the API's
 * error shape with a small body, /health answers all along (heartbeat), and the server
 * serves a normal request afterwards.
 */
import type { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/engine/types.js';
import { errorResponse } from '../../src/http/errors.js';
import { invalidRequest } from '../../src/common/protocol-error.js';
import { expectNoStall, withHeartbeat } from './heartbeat.js';
import { MODEL, expectError, expectErrorBody, loadEngine, postJson, ssePayloads, testApp } from './helpers.js';

let engine: Engine;
let app: Hono;
beforeAll(async () => {
  engine = await loadEngine();
  app = testApp(engine);
});
afterAll(() => engine.dispose());

const completion = { model: MODEL, prompt: 'Once upon a time', max_tokens: 4 };
const chat = { model: MODEL, messages: [{ role: 'user', content: 'Hello' }], max_tokens: 4 };

/** The largest error body any refusal here may have: a message quotes at most a prefix of a value. */
const SMALL_BODY_BYTES = 2048;

async function expectServes(): Promise<void> {
  const response = await postJson(app, '/v1/completions', completion);
  expect(response.status, await response.clone().text()).toBe(200);
  expect((await response.json()).choices[0].text.length).toBeGreaterThan(0);
}

interface Refusal {
  name: string;
  path: string;
  /** A function, so big bodies are built outside the heartbeat (the client's work). */
  body: () => unknown;
  param: string | null;
  message: RegExp;
  status?: number;
}

/** Sends each refusal while the heartbeat runs: a 4xx in the error shape, small, no stall, the server fine after. */
async function expectRefusedQuickly({ path, body, param, message, status = 400 }: Refusal): Promise<void> {
  const built = body();
  // Bodies given as text are sent as is (giant literals JSON.stringify cannot write).
  const text = typeof built === 'string' ? built : JSON.stringify(built);
  const { result, report } = await withHeartbeat(app, async () => {
    const response = await postJson(app, path, text);
    return { status: response.status, raw: await response.text() };
  });
  expect(result.status, result.raw.slice(0, 500)).toBe(status);
  expect(result.raw.length).toBeLessThan(SMALL_BODY_BYTES);
  const parsed = JSON.parse(result.raw);
  expectErrorBody(parsed, status, 'BadRequestError', param);
  expect(parsed.message).toMatch(message);
  expectNoStall(report);
  expect([...report.healthStatuses]).toEqual([200]);
  await expectServes();
}

describe('bounds judge values after lax coercion, and the request totals', () => {
  const cases: Refusal[] = [
    { name: 'n as the string "1000000" (issue 24: an 80-byte hang)', path: '/v1/completions', body: () => ({ ...completion, n: '1000000', temperature: 1 }), param: 'n', message: /n must be at most \d+ .*got 1000000/ },
    { name: 'best_of as the string "1000000"', path: '/v1/completions', body: () => ({ ...completion, best_of: '1000000', temperature: 1 }), param: 'best_of', message: /best_of must be at most \d+ .*got 1000000/ },
    { name: 'n as " 65 " on chat', path: '/v1/chat/completions', body: () => ({ ...chat, n: ' 65 ', temperature: 1 }), param: 'n', message: /n must be at most/ },
    { name: 'n as "1e6"', path: '/v1/chat/completions', body: () => ({ ...chat, n: '1e6', temperature: 1 }), param: 'n', message: /n must be at most .*got 1000000/ },
    { name: 'four prompts × n "64" (issue 24: 256 sequences)', path: '/v1/completions', body: () => ({ ...completion, prompt: ['a', 'b', 'c', 'd'], n: '64', temperature: 1 }), param: 'n', message: /at most/ },
    { name: 'four prompts × n "16": 64 sequences, past one request\'s share', path: '/v1/completions', body: () => ({ ...completion, prompt: ['a', 'b', 'c', 'd'], n: '16', temperature: 1 }), param: 'prompt', message: /4 prompts × 16 sequences each is 64/ },
    { name: 'beam width (best_of "64") as a string', path: '/v1/completions', body: () => ({ ...completion, use_beam_search: 'true', n: '2', best_of: '64', temperature: 0 }), param: 'best_of', message: /best_of must be at most/ },
  ];
  it.each(cases)('$name', (refusal) => expectRefusedQuickly(refusal));

  it('a numeric string at the bound is served like the number', async () => {
    const response = await postJson(app, '/v1/completions', { ...completion, max_tokens: '2', n: '3', best_of: '3', temperature: '1' });
    expect(response.status, await response.clone().text()).toBe(200);
    expect((await response.json()).choices).toHaveLength(3);
  });
});

describe('a prompt that cannot fit the context is refused from its length, before any tokenizer runs', () => {
  const cjk = () => '漢'.repeat(1_000_000);
  const cases: Refusal[] = [
    { name: '1 M CJK characters on /v1/completions (issue 24: 4 M froze the loop 12–17 s)', path: '/v1/completions', body: () => ({ ...completion, prompt: cjk() }), param: 'prompt', message: /maximum context length is 512 tokens\. However, you requested at least \d+ tokens/ },
    { name: '4 M characters of one word on /generate', path: '/generate', body: () => ({ prompt: 'a'.repeat(4_000_000), max_tokens: 2 }), param: 'prompt', message: /The prompt has at least \d+ tokens after tokenization, more than the limit/ },
    { name: '1 M CJK characters in a chat message', path: '/v1/chat/completions', body: () => ({ ...chat, messages: [{ role: 'user', content: cjk() }] }), param: 'messages', message: /However, you requested at least \d+ tokens/ },
    { name: 'the second of two prompts, 1 M characters without a space', path: '/v1/completions', body: () => ({ ...completion, prompt: ['Once', 'x'.repeat(1_000_000)] }), param: 'prompt[1]', message: /at least \d+ tokens/ },
  ];
  it.each(cases)('$name', (refusal) => expectRefusedQuickly(refusal));
});

describe('text tokenized with no context check (/tokenize, truncate_prompt_tokens) is bounded by the context', () => {
  const oneWord = () => 'x'.repeat(1_000_000);
  const cases: Refusal[] = [
    { name: '1 M characters of one word on /tokenize', path: '/tokenize', body: () => ({ model: MODEL, prompt: oneWord() }), param: 'prompt', message: /at least \d+ tokens \(judged from its length and words, before tokenizing\), more than the 512 tokens of this model's context length/ },
    { name: '1 M CJK characters in a /tokenize chat message', path: '/tokenize', body: () => ({ model: MODEL, messages: [{ role: 'user', content: '漢'.repeat(1_000_000) }] }), param: 'messages', message: /more than the 512 tokens of this model's context length/ },
    { name: '1 M characters of one word with truncate_prompt_tokens', path: '/v1/completions', body: () => ({ ...completion, prompt: oneWord(), truncate_prompt_tokens: 10 }), param: 'prompt', message: /the most this server tokenizes for \/tokenize or for a piece of a truncate_prompt_tokens prompt/ },
    { name: 'a chat message of 1 M characters with truncate_prompt_tokens', path: '/v1/chat/completions', body: () => ({ ...chat, messages: [{ role: 'user', content: oneWord() }], truncate_prompt_tokens: 10 }), param: 'messages', message: /truncate_prompt_tokens/ },
  ];
  it.each(cases)('$name', (refusal) => expectRefusedQuickly(refusal));

  it('text longer than the context within the length bound: /tokenize counts up to the context and refuses; truncation keeps its last tokens', async () => {
    const story = 'Once upon a time there was a little girl. '.repeat(60); // ~2.5 K characters, past 512 tokens
    // 540 words: refused before tokenizing. 60 hyphenated words of as many characters: tokenized, and stopped past 512.
    const words = await expectError(await postJson(app, '/tokenize', { model: MODEL, prompt: story }), 400, 'BadRequestError', 'prompt');
    expect(words).toMatch(/at least 513 tokens \(judged from its length and words, before tokenizing\)/);
    const hyphenated = story.replaceAll(/(\S) (?=\S)/g, '$1-');
    expect(engine.tokenizer.encode(hyphenated).length).toBeGreaterThan(512);
    const message = await expectError(await postJson(app, '/tokenize', { model: MODEL, prompt: hyphenated }), 400, 'BadRequestError', 'prompt');
    expect(message).toMatch(/at least \d+ tokens \(tokenizing stopped there\), more than the 512 tokens of this model's context length/);
    const fits = await postJson(app, '/tokenize', { model: MODEL, prompt: story.slice(0, 1000) });
    expect(((await fits.json()) as { count: number }).count).toBe(engine.tokenizer.encode(story.slice(0, 1000)).length);
    const truncated = await postJson(app, '/v1/completions', { ...completion, prompt: story, truncate_prompt_tokens: 100 });
    expect(truncated.status).toBe(200);
    expect((await truncated.json()).usage.prompt_tokens).toBe(100);
  });
});

describe('giant number literals are refused from their length, naming the field', () => {
  const digits = (count: number) => '7'.repeat(count);
  const cases: Refusal[] = [
    { name: 'a 16 MB integer in seed (issue 24: a 12.8 s freeze, echoed twice)', path: '/v1/completions', body: () => `{"model":"${MODEL}","prompt":"Hi","max_tokens":2,"seed":${digits(16_000_000)}}`, param: 'seed', message: /seed is a number literal of 16000000 characters \(7{20}…\); numbers may have at most 100/ },
    { name: 'a 1 MB float in temperature on /generate', path: '/generate', body: () => `{"prompt":"Hi","temperature":0.${digits(1_000_000)}}`, param: 'temperature', message: /temperature is a number literal of 1000002 characters/ },
    { name: 'a long literal deep in a guided_json schema', path: '/v1/completions', body: () => `{"model":"${MODEL}","prompt":"Hi","guided_json":{"type":"integer","maximum":${digits(5000)}}}`, param: 'guided_json.maximum', message: /guided_json\.maximum is a number literal of 5000 characters/ },
    { name: 'a long literal in a prompt of token ids', path: '/v1/completions', body: () => `{"model":"${MODEL}","prompt":[1,2,${digits(200)}]}`, param: 'prompt[2]', message: /prompt\[2\] is a number literal of 200 characters/ },
    { name: 'a 16 MB numeric string in seed (lax coercion would make a bigint of it)', path: '/v1/completions', body: () => ({ ...completion, seed: digits(16_000_000) }), param: 'seed', message: /seed must be an integer in .*got "7{40}\.\.\."/ },
    { name: 'a 4 MB numeric string in n', path: '/v1/chat/completions', body: () => ({ ...chat, n: digits(4_000_000) }), param: 'n', message: /n must be an integer >= 1, got "7{40}\.\.\."/ },
    { name: 'a 1 MB logit_bias key', path: '/v1/completions', body: () => ({ ...completion, logit_bias: { [digits(1_000_000)]: 1 } }), param: 'logit_bias', message: /has key "7{40}\.\.\.", but token ids must be integers/ },
  ];
  it.each(cases)('$name', (refusal) => expectRefusedQuickly(refusal));

  it('a 100-character literal is still read', async () => {
    const response = await postJson(app, '/v1/completions', `{"model":"${MODEL}","prompt":"Hi","max_tokens":2,"temperature":0.${'0'.repeat(98)}}`);
    expect(response.status, await response.clone().text()).toBe(200);
  });
});

describe('a body of millions of small values is parsed in slices, the event loop free', () => {
  // Issue 24's re-check: 8 M small numbers (a 16 MB body, under maxRequestBytes) held the loop
  // 2.5–5 s in one parse; in 10 ms slices the longest hold was ~70 ms.
  it('4 M numbers in an ignored field and 2 M escapes in a prompt: served, no stall', async () => {
    const numbers = `{"model":"${MODEL}","prompt":"Hi","max_tokens":2,"zzz":[${Array(4_000_000).fill('1').join(',')}]}`;
    const escapes = `{"model":"${MODEL}","prompt":"${'\\n'.repeat(2_000_000)}","max_tokens":2}`;
    const { result, report } = await withHeartbeat(app, async () => {
      const first = await postJson(app, '/v1/completions', numbers);
      const second = await postJson(app, '/v1/completions', escapes);
      return { first: first.status, second: second.status, text: await second.text() };
    });
    expect(result.first).toBe(200);
    // 2 M newlines are far past the context: a 400 from the length, after a sliced parse.
    expect(result.second, result.text.slice(0, 300)).toBe(400);
    expectNoStall(report);
    expect([...report.healthStatuses]).toEqual([200]);
  });
});

describe('error bodies never echo more than a prefix of a value', () => {
  it('whatever a message or param quotes, the body stays small', async () => {
    const huge = 'x'.repeat(1_000_000);
    const response = errorResponse(invalidRequest(`bad value ${huge}`, `logit_bias.${huge}`));
    const raw = await response.text();
    expect(raw.length).toBeLessThan(SMALL_BODY_BYTES + 512);
    const body = JSON.parse(raw);
    expect(body.message).toMatch(/^bad value x+…$/);
    expect(body.param).toMatch(/^logit_bias\.x+…$/);
  });
});

describe('one request cannot take every sequence slot', () => {
  it('n: 64 and a beam width of 64 are refused naming maxRequestSlotPercent', async () => {
    for (const body of [{ ...completion, n: 64, temperature: 1 }, { ...completion, n: 2, best_of: 64, use_beam_search: true, temperature: 0 }]) {
      const response = await postJson(app, '/v1/completions', body);
      expect(response.status).toBe(400);
      expect((await response.json()).message).toMatch(/at most 32 \(maxRequestSlotPercent: one request may hold 50% of the 64 sequences/);
    }
  });

  it('a request wider than the extra share allows (1 + maxExtraSequenceSlotPercent of the batch) is refused naming that setting', async () => {
    const narrowShare = testApp(engine, { maxExtraSequenceSlotPercent: 10 });
    const refused = await postJson(narrowShare, '/v1/completions', { ...completion, n: 8, temperature: 1 });
    expect(refused.status).toBe(400);
    const body = await refused.json();
    expect(body.param).toBe('n');
    expect(body.message).toMatch(/n must be at most 7 \(maxExtraSequenceSlotPercent: requests' sequences beyond their first may hold 10% of the 64 sequences/);
    expect((await postJson(narrowShare, '/v1/completions', { ...completion, n: 7, temperature: 1 })).status).toBe(200);
  });

  it('two widest requests cannot fill the batch: a normal request beside them starts within 2 engine steps, the wide ones finish, outputs unchanged', async () => {
    const wideBody = { ...completion, n: 32, max_tokens: 120, ignore_eos: true, temperature: 1, seed: 7 };
    const normalBody = { ...completion, max_tokens: 8, temperature: 0 };
    // Alone first: what each must still give beside the others (seeded and greedy).
    const soloWide = choiceTexts((await (await postJson(app, '/v1/completions', wideBody)).json()).choices);
    const soloNormal = (await (await postJson(app, '/v1/completions', normalBody)).json()).choices[0].text as string;
    expect(soloWide).toHaveLength(32);

    const { result, report } = await withHeartbeat(app, async () => {
      // The first wide stream is under way (its response came with its first tokens); the
      // second waits for the extra share, so its response has not come yet.
      const first = await postJson(app, '/v1/completions', { ...wideBody, stream: true });
      expect(first.status).toBe(200);
      const firstText = readAll(first);
      const second = postJson(app, '/v1/completions', { ...wideBody, stream: true });
      // Queued: counted by the engine's running figure (rows running + requests waiting).
      while (engine.stats().running < 34) await new Promise((resolve) => setTimeout(resolve, 1));
      const stepsAtArrival = engine.stats().steps;
      const normal = await postJson(app, '/v1/completions', { ...normalBody, stream: true });
      const stepsToStart = engine.stats().steps - stepsAtArrival;
      const normalText = await readAll(normal);
      const secondText = await readAll(await second);
      return { stepsToStart, firstText: await firstText, secondText, normalText };
    });
    console.log(`normal request beside two n=32 streams: first token after ${result.stepsToStart} engine steps`);
    // Its prefill is one step; at most one decode step of the running batch comes before it.
    expect(result.stepsToStart).toBeLessThanOrEqual(2);
    expect(streamedTexts(result.normalText)).toEqual([soloNormal]);
    expect(streamedTexts(result.firstText)).toEqual(soloWide);
    expect(streamedTexts(result.secondText)).toEqual(soloWide);
    expectNoStall(report);
    expect([...report.healthStatuses]).toEqual([200]);
    await expectServes();
  });
});

/** A response's body as text, read to the end. */
async function readAll(response: Response): Promise<string> {
  expect(response.status).toBe(200);
  return response.text();
}

function choiceTexts(choices: Array<{ index: number; text: string }>): string[] {
  return [...choices].sort((a, b) => a.index - b.index).map((choice) => choice.text);
}

/** Each choice's text from a /v1/completions stream, in index order. */
function streamedTexts(raw: string): string[] {
  const texts: string[] = [];
  for (const payload of ssePayloads(raw)) {
    if (payload === '[DONE]') continue;
    for (const choice of JSON.parse(payload).choices as Array<{ index: number; text: string }>) texts[choice.index] = (texts[choice.index] ?? '') + choice.text;
  }
  return texts;
}

describe('the logprobs one request may report are bounded up front', () => {
  // About 400 tokens of the embedded model's vocabulary: close to its 512-token context.
  const longPrompt = 'Once upon a time there was a little girl. '.repeat(40);

  it('n 32 × logprobs 20 × echo of a 400-token prompt (issue 24: 63.5 MB) is refused naming maxLogprobEntries', async () => {
    const refusal: Refusal = {
      name: 'amplification',
      path: '/v1/completions',
      body: () => ({ ...completion, prompt: longPrompt, max_tokens: 16, n: 32, logprobs: 20, echo: true, temperature: 1 }),
      param: 'logprobs',
      message: /could report up to \d+ logprob entries .* more than the 262144 one request may \(maxLogprobEntries\)/,
    };
    await expectRefusedQuickly(refusal);
  });

  it('prompt_logprobs on chat count too', async () => {
    const response = await postJson(app, '/v1/chat/completions', { ...chat, messages: [{ role: 'user', content: longPrompt }], n: 32, temperature: 1, prompt_logprobs: 20 });
    expect(response.status).toBe(400);
    const body = await response.json();
    expect(body.param).toBe('prompt_logprobs');
    expect(body.message).toMatch(/maxLogprobEntries/);
  });

  // Naming and shaping ~500 positions × 21 entries in one pass held the loop for ~520 ms of
  // CPU at load 20; in blocks of 32 positions the longest hold was ~150 ms (the prefill step).
  it('a large response within the budget is served, named, shaped and written in blocks, the event loop free', async () => {
    const { result, report } = await withHeartbeat(app, async () => {
      const response = await postJson(app, '/v1/completions', { ...completion, prompt: longPrompt, max_tokens: 16, n: 2, logprobs: 20, echo: true, temperature: 1 });
      return { status: response.status, text: await response.text() };
    });
    expect(result.status).toBe(200);
    const body = JSON.parse(result.text);
    expect(body.choices).toHaveLength(2);
    expect(body.choices[0].logprobs.top_logprobs.length).toBeGreaterThan(300);
    expect([...report.healthStatuses]).toEqual([200]);
    expect(report.tokens).toBeGreaterThan(3);
    // A few hundred ms: the loop is never held longer (CPU-backed; see heartbeat.ts).
    expectNoStall(report, 300);
  });

  it('chat prompt_logprobs and logprobs of a long prompt, non-streaming, keep the event loop free', async () => {
    const { result, report } = await withHeartbeat(app, async () => {
      const response = await postJson(app, '/v1/chat/completions', {
        ...chat,
        messages: [{ role: 'user', content: longPrompt }],
        max_tokens: 16,
        n: 2,
        temperature: 1,
        prompt_logprobs: 20,
        logprobs: true,
        top_logprobs: 20,
      });
      return { status: response.status, text: await response.text() };
    });
    expect(result.status, result.text.slice(0, 300)).toBe(200);
    const body = JSON.parse(result.text);
    expect(body.prompt_logprobs.length).toBe(body.usage.prompt_tokens);
    expect(Object.keys(body.prompt_logprobs[1]).length).toBeGreaterThanOrEqual(20);
    expect(body.choices[1].logprobs.content).toHaveLength(body.choices[1].logprobs.content.length);
    // A few hundred ms: the loop is never held longer (CPU-backed; see heartbeat.ts).
    expectNoStall(report, 400);
  });
});

describe('X-Request-Id is taken only as a short safe token', () => {
  async function idsFor(header: string): Promise<{ header: string | null; id: string }> {
    const response = await postJson(app, '/v1/completions', completion, { headers: { 'content-type': 'application/json', 'x-request-id': header } });
    expect(response.status).toBe(200);
    return { header: response.headers.get('x-request-id'), id: (await response.json()).id };
  }

  it.each(['req-42', '3f2a9c1e-7b4d-4e0a-9f1c-2d3e4f5a6b7c', 'trace.span:7_a'])('%s is echoed', async (token) => {
    expect(await idsFor(token)).toEqual({ header: token, id: `cmpl-${token}` });
  });

  it.each([
    ['8 KB (issue 24: echoed verbatim)', 'a'.repeat(8192)],
    ['65 characters', 'b'.repeat(65)],
    ['spaces', 'a b'],
    ['a quote and angle brackets', '"><script>'],
    ['a leading dash', '-x'],
  ])('%s: replaced by a generated id', async (_name, header) => {
    const { header: echoed, id } = await idsFor(header);
    expect(echoed).toMatch(/^[0-9a-f]{32}$/);
    expect(id).toBe(`cmpl-${echoed}`);
  });

  it('a body request_id follows the same rule', async () => {
    const response = await postJson(app, '/v1/chat/completions', { ...chat, request_id: 'x'.repeat(100_000) });
    expect(response.status).toBe(200);
    expect((await response.json()).id).toMatch(/^chatcmpl-[0-9a-f]{32}$/);
  });
});
