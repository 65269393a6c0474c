/**
 * Issue 13's reproducers, and more of each family: requests that could make the server
 * run out of memory, freeze its event loop or break structured output are refused with a
 * 400 naming the parameter and the bound; while each is handled the server keeps serving
 * (heartbeat), and a normal request and a guided one succeed afterwards.
 */
import { readFileSync } from 'node:fs';
import type { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { createNodeEngine } from '../../src/runtime/node/engine.js';
import type { Engine } from '../../src/engine/types.js';
import { expectNoStall, withHeartbeat } from './heartbeat.js';
import { MODEL, MODEL_DIR, expectError, loadEngine, postJson, testApp } from './helpers.js';

let engine: Engine;
let app: Hono;
beforeAll(async () => {
  engine = await loadEngine();
  app = testApp(engine);
});
afterAll(() => engine.dispose());

const completion = { model: MODEL, prompt: 'Once upon a time', max_tokens: 4 };
const chat = { model: MODEL, messages: [{ role: 'user', content: 'Hello' }], max_tokens: 4 };

function nested(depth: number, leaf: unknown, wrap: (inner: unknown) => unknown): unknown {
  let value = leaf;
  for (let i = 0; i < depth; i++) value = wrap(value);
  return value;
}

/** A normal request and a guided one both succeed (structured output still works). */
async function expectServes(target: Hono = app): Promise<void> {
  const plain = await postJson(target, '/v1/completions', completion);
  expect(plain.status, await plain.clone().text()).toBe(200);
  const guided = await postJson(target, '/v1/completions', { ...completion, max_tokens: 12, guided_regex: '(yes|no)!', temperature: 0 });
  expect(guided.status, await guided.clone().text()).toBe(200);
  const text = (await guided.json()).choices[0].text;
  expect(text).toMatch(/^(yes|no)!$/);
}

interface BoundCase {
  name: string;
  path: string;
  body: () => unknown;
  param: string;
  message: RegExp;
}

const CASES: BoundCase[] = [
  // Out of memory: n / best_of.
  { name: 'best_of of a billion (issue 13)', path: '/v1/completions', body: () => ({ ...completion, max_tokens: 2, best_of: 1_000_000_000 }), param: 'best_of', message: /best_of must be at most 32 \(maxRequestSlotPercent: one request may hold 50% of the 64 sequences .*\), got 1000000000/ },
  { name: 'n of 1000 on chat', path: '/v1/chat/completions', body: () => ({ ...chat, n: 1000 }), param: 'n', message: /n must be at most 32 \(maxRequestSlotPercent/ },
  { name: 'n of 100 on /generate (in the spec range, wider than a batch)', path: '/generate', body: () => ({ prompt: 'Hi', max_tokens: 2, n: 100, temperature: 1 }), param: 'n', message: /n must be at most 32/ },
  { name: '40 prompts × n 4 in one completions request', path: '/v1/completions', body: () => ({ ...completion, max_tokens: 2, prompt: Array.from({ length: 40 }, () => 'Hi'), n: 4, temperature: 1 }), param: 'prompt', message: /at most 32 sequences .*: 40 prompts × 4 sequences each is 160/ },
  // Chat templates: time and memory.
  { name: 'a template looping 10^8 times (issue 13)', path: '/tokenize', body: () => ({ messages: [{ role: 'user', content: 'x' }], chat_template: '{% for i in range(100000000) %}{% endfor %}' }), param: 'messages', message: /maxPromptChars|maxChatTemplateSteps/ },
  { name: 'nested template loops', path: '/tokenize', body: () => ({ messages: [{ role: 'user', content: 'x' }], chat_template: '{% for i in range(3000) %}{% for j in range(3000) %}{{ j }}{% endfor %}{% endfor %}' }), param: 'chat_template', message: /more than 2200 evaluation steps \(a request's own template: 2000 \+ 200 per message, within maxChatTemplateSteps\)/ },
  { name: 'a template doubling a string', path: '/v1/chat/completions', body: () => ({ ...chat, chat_template: '{% set ns = namespace(s="xy") %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}' }), param: 'messages', message: /longer than 4194304 characters \(maxPromptChars\)/ },
  { name: 'a template filter asked for a huge width', path: '/tokenize', body: () => ({ messages: [{ role: 'user', content: 'x' }], chat_template: '{{ "a\\nb" | indent(300000000) }}' }), param: 'messages', message: /passed 300000000 .* \(maxPromptChars\)/ },
  { name: 'a chat template of 100 K characters', path: '/v1/chat/completions', body: () => ({ ...chat, chat_template: 'x'.repeat(100_000) }), param: 'chat_template', message: /at most 65536 characters \(maxChatTemplateChars\), got 100000/ },
  { name: '2000 messages', path: '/v1/chat/completions', body: () => ({ ...chat, messages: Array.from({ length: 2000 }, () => ({ role: 'user', content: 'x' })) }), param: 'messages', message: /at most 1024 messages \(maxMessages\), got 2000/ },
  // Structured output: XGrammar's compile time, its stack, our parsers' stack.
  { name: 'guided_regex "[\\s\\S]{10000}" (issue 13: a 24 s stall)', path: '/v1/completions', body: () => ({ ...completion, guided_regex: '[\\s\\S]{10000}' }), param: 'guided_regex', message: /repetition counts above 1000 .*maxGuidedRepetition/ },
  { name: 'guided_regex "[\\s\\S]{1000}": a grammar too large', path: '/v1/completions', body: () => ({ ...completion, guided_regex: '[\\s\\S]{1000}' }), param: 'guided_regex', message: /too complex: .* \(maxGrammarChars\)/ },
  { name: 'a regex nested 5000 groups deep (stack overflow)', path: '/v1/completions', body: () => ({ ...completion, guided_regex: `${'('.repeat(5000)}a${')'.repeat(5000)}` }), param: 'guided_regex', message: /nested more than 64 deep .*maxGuidedNestingDepth/ },
  { name: '250 nested anyOf (issue 13: XGrammar trapped)', path: '/v1/completions', body: () => ({ ...completion, guided_json: nested(250, { type: 'string' }, (inner) => ({ anyOf: [inner, { type: 'integer' }] })) }), param: 'guided_json', message: /nested more than 64 levels deep \(maxGuidedNestingDepth\)/ },
  { name: 'a schema with 2000 properties', path: '/v1/chat/completions', body: () => ({ ...chat, response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object', properties: Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`p${i}`, { type: 'integer' }])) } } } }), param: 'response_format', message: /more than 1024 properties in all \(maxGuidedProperties\)/ },
  { name: 'a string of maxLength 100000', path: '/v1/completions', body: () => ({ ...completion, guided_json: { type: 'string', maxLength: 100_000 } }), param: 'guided_json', message: /maxLength.*values above 1000 .*maxGuidedRepetition/ },
  { name: 'a schema of 100 K characters', path: '/v1/completions', body: () => ({ ...completion, guided_json: { type: 'string', description: 'd'.repeat(100_000) } }), param: 'guided_json', message: /at most 65536 characters \(maxGuidedSourceChars\)/ },
  { name: '20000 choices', path: '/v1/completions', body: () => ({ ...completion, guided_choice: Array.from({ length: 20000 }, (_, i) => `choice ${i}`) }), param: 'guided_choice', message: /maxGuidedSourceChars/ },
  { name: 'a lone surrogate in guided_choice (issue 13)', path: '/v1/completions', body: () => ({ model: MODEL, prompt: 'Hi', max_tokens: 8, guided_choice: ['\ud800'] }), param: 'guided_choice', message: /lone UTF-16 surrogate/ },
  { name: 'a lone surrogate in a schema enum', path: '/generate', body: () => ({ prompt: 'Hi', max_tokens: 8, guided_json: { enum: ['ok', 'a\udc00'] } }), param: 'guided_json', message: /lone UTF-16 surrogate/ },
  // Stop lists (stack overflow) and prompts.
  { name: 'a stop list of 200000 strings (stack overflow)', path: '/v1/completions', body: () => ({ ...completion, stop: Array.from({ length: 200_000 }, (_, i) => `s${i}`) }), param: 'stop', message: /at most 128 strings \(maxStopStrings\), got 200000/ },
  { name: 'stop strings of 40 K characters', path: '/v1/chat/completions', body: () => ({ ...chat, stop: ['a'.repeat(20_000), 'b'.repeat(20_000)] }), param: 'stop', message: /at most 32768 characters over all its strings \(maxStopChars\), got 40000/ },
  { name: 'a prompt of 5 M characters on /tokenize', path: '/tokenize', body: () => ({ prompt: 'ab '.repeat(1_700_000) }), param: 'prompt', message: /at most 4194304 characters of text \(maxPromptChars\), got 5100000/ },
  { name: 'messages of 5 M characters', path: '/v1/chat/completions', body: () => ({ ...chat, messages: [{ role: 'user', content: [{ type: 'text', text: 'x'.repeat(3_000_000) }, { type: 'text', text: 'y'.repeat(2_000_000) }] }] }), param: 'messages', message: /at most 4194304 characters of text \(maxPromptChars\), got more than 4194304/ },
];

describe('request bounds: refused before any work, the server serving all along', () => {
  it.each(CASES)('$name', async ({ path, body, param, message }) => {
    const { result, report } = await withHeartbeat(app, async () => {
      const response = await postJson(app, path, body());
      return expectError(response, 400, 'BadRequestError', param);
    });
    expect(result).toMatch(message);
    expectNoStall(report);
    expect([...report.healthStatuses]).toEqual([200]);
    await expectServes();
  });

  it('a 30 MB /tokenize body (issue 13) is refused with a 413 before it is parsed', async () => {
    const body = JSON.stringify({ prompt: 'x'.repeat(30_000_000) }); // built outside the heartbeat: the client's work
    const { result, report } = await withHeartbeat(app, async () =>
      expectError(postJson(app, '/tokenize', body), 413, 'RequestEntityTooLargeError'),
    );
    expect(result).toMatch(/maxRequestBytes/);
    expectNoStall(report);
    await expectServes();
  });

  it('n above maxSequencesPerRequest is refused naming that setting when batches are wider', async () => {
    // The engine itself runs 256 rows (the HTTP bound takes the engine's row cap too).
    const wideEngine = await createNodeEngine({ modelDir: MODEL_DIR, servedModelName: MODEL, limits: { maxRunningSequences: 256 } });
    onTestFinished(() => wideEngine.dispose());
    const wide = testApp(wideEngine, { maxRunningSequences: 256 });
    const message = await expectError(postJson(wide, '/v1/completions', { ...completion, n: 129, temperature: 1 }), 400, 'BadRequestError', 'n');
    expect(message).toMatch(/n must be at most 128 \(maxSequencesPerRequest is 128\), got 129/);
    const allowed = await postJson(wide, '/v1/completions', { ...completion, max_tokens: 1, n: 128, temperature: 1 });
    expect(allowed.status).toBe(200);
    expect((await allowed.json()).choices).toHaveLength(128);
  });

  it('every bound is a setting: lowered, it refuses what the default allows', async () => {
    const strict = testApp(engine, { maxStopStrings: 1, maxGuidedRepetition: 3, maxPromptChars: 10 });
    expect(await expectError(postJson(strict, '/v1/completions', { ...completion, prompt: 'x', stop: ['a', 'b'] }), 400, 'BadRequestError', 'stop')).toMatch(/maxStopStrings/);
    expect(await expectError(postJson(strict, '/v1/completions', { ...completion, prompt: 'x', guided_regex: 'a{4}' }), 400, 'BadRequestError', 'guided_regex')).toMatch(/above 3 .*maxGuidedRepetition/);
    expect(await expectError(postJson(strict, '/generate', { prompt: 'Once upon a time', max_tokens: 2 }), 400, 'BadRequestError', 'prompt')).toMatch(/at most 10 characters .*maxPromptChars/);
  });
});

describe('in range but degenerate numbers never reach sampling as non-finite rows', () => {
  it.each([
    ['a denormal repetition_penalty', '/v1/completions', { repetition_penalty: 1e-310 }],
    ['a huge repetition_penalty', '/v1/completions', { repetition_penalty: 1e300, temperature: 1e-5 }],
    ['a denormal repetition_penalty on /generate', '/generate', { repetition_penalty: 5e-324, temperature: 0.5 }],
  ])('%s: 200 with finite logprobs', async (_name, path, extra) => {
    const body = path === '/generate' ? { prompt: 'Once upon a time', max_tokens: 6, ...extra } : { ...completion, max_tokens: 6, ignore_eos: true, logprobs: 2, ...extra };
    const response = await postJson(app, path, body);
    expect(response.status, await response.clone().text()).toBe(200);
    const json = await response.json();
    if (path !== '/generate') {
      const logprobs: number[] = json.choices[0].logprobs.token_logprobs;
      expect(logprobs).toHaveLength(6);
      for (const logprob of logprobs) expect(Number.isFinite(logprob)).toBe(true);
    } else {
      expect(json.text).toHaveLength(1);
      expect(json.text[0].startsWith('Once upon a time')).toBe(true);
    }
    await expectServes();
  });

  it('beam search with a denormal repetition_penalty and an overflowing length_penalty still returns its n beams', async () => {
    const body = { ...completion, max_tokens: 6, use_beam_search: true, n: 2, best_of: 3, temperature: 0, repetition_penalty: 1e-310, length_penalty: 1e308 };
    const response = await postJson(app, '/v1/completions', body);
    expect(response.status, await response.clone().text()).toBe(200);
    expect((await response.json()).choices).toHaveLength(2);
    await expectServes();
  });
});

describe('isolation', () => {
  it('a guided_choice with a lone surrogate batched with 7 streams fails only itself (issue 13)', async () => {
    const streams = Array.from({ length: 7 }, () =>
      postJson(app, '/v1/completions', { model: MODEL, prompt: 'Hi', max_tokens: 8, stream: true, temperature: 0 }).then(async (r) => ({ status: r.status, text: await r.text() })),
    );
    const bad = postJson(app, '/v1/completions', { model: MODEL, prompt: 'Hi', max_tokens: 8, stream: true, guided_choice: ['\ud800'] });
    const message = await expectError(bad, 400, 'BadRequestError', 'guided_choice');
    expect(message).toMatch(/lone UTF-16 surrogate/);
    for (const { status, text } of await Promise.all(streams)) {
      expect(status).toBe(200);
      expect(text).not.toMatch(/"error"/);
      expect(text).toMatch(/"finish_reason":"length"/);
      expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
    }
    await expectServes();
  });

  it('an XGrammar trap fails only its request, /health is 503 until XGrammar is replaced, then guided requests work again', async () => {
    // With the nesting bound lifted, the 250-deep anyOf of issue 13 reaches XGrammar and traps it.
    const unbounded = testApp(engine, { maxGuidedNestingDepth: 10_000, maxGuidedSourceChars: 1_000_000, maxGrammarChars: 10_000_000, maxGrammarWork: 1e12 });
    const running = postJson(unbounded, '/v1/completions', { ...completion, max_tokens: 40, ignore_eos: true, temperature: 0, stream: true }).then((r) => r.text());
    const deep = nested(250, { type: 'string' }, (inner) => ({ anyOf: [inner, { type: 'integer' }] }));
    const message = await expectError(postJson(unbounded, '/v1/completions', { ...completion, guided_json: deep }), 400, 'BadRequestError', 'guided_json');
    expect(message).toMatch(/too complex for the grammar engine/);
    expect([200, 503]).toContain((await unbounded.request('/health')).status);
    const started = Date.now();
    while ((await unbounded.request('/health')).status !== 200) {
      expect(Date.now() - started, 'XGrammar replaced within 10 s').toBeLessThan(10_000);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(await running).toMatch(/"finish_reason":"length"[^]*data: \[DONE\]\n\n$/);
    await expectServes(unbounded);
  });
});

describe('long inputs within the bounds', () => {
  it.each([
    ['/generate', { prompt: 'Once upon a time there was a dog. '.repeat(100_000), max_tokens: 2 }, /The prompt has at least \d+ tokens after tokenization, more than the limit of 511/],
    ['/v1/completions', { ...completion, prompt: 'Once upon a time there was a dog. '.repeat(100_000) }, /maximum context length is 512 tokens\. However, you requested at least \d+ tokens/],
  ])('a 3.4 M character prompt on %s stops tokenizing once it is surely too long', async (path, body, message) => {
    const { result, report } = await withHeartbeat(app, async () => expectError(postJson(app, path, body), 400, 'BadRequestError', 'prompt'));
    expect(result).toMatch(message);
    expectNoStall(report);
  });

  it('a prompt of 2 M characters on /tokenize and with truncate_prompt_tokens: tokenizing stops past the context, or reads only the end', async () => {
    // Before, /tokenize tokenized all of it (~1 s of CPU here) to report 500 K tokens.
    const unit = 'Lily and Tom  went to the park.\nThey played. ';
    const prompt = unit.repeat(Math.ceil(2_000_000 / unit.length));
    const { result, report } = await withHeartbeat(app, async () => {
      const counted = await expectError(postJson(app, '/tokenize', { prompt }), 400, 'BadRequestError', 'prompt');
      const truncated = await postJson(app, '/v1/completions', { ...completion, prompt, truncate_prompt_tokens: 300, max_tokens: 8, temperature: 0 });
      return { counted, truncated: { status: truncated.status, body: (await truncated.json()) as { choices: [{ text: string }]; usage: { prompt_tokens: number } } } };
    });
    expectNoStall(report);
    expect(result.counted).toMatch(/more than the 512 tokens of this model's context length/);
    expect(result.truncated.status).toBe(200);
    expect(result.truncated.body.usage.prompt_tokens).toBe(300);
    // The same as sending the last 300 of the whole text's ids.
    const last = engine.tokenizer.encode(prompt.slice(-5000), { addSpecialTokens: false }).slice(-300);
    const byIds = await postJson(app, '/v1/completions', { ...completion, prompt: last, max_tokens: 8, temperature: 0 });
    expect(((await byIds.json()) as { choices: [{ text: string }] }).choices[0].text).toBe(result.truncated.body.choices[0].text);
  });
});

describe("a request's own chat template gets steps for its messages, not the whole budget", () => {
  it("the model's own template sent back with 128 messages renders (~13 K steps), as the model's does", async () => {
    const messages = Array.from({ length: 128 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: 'Hello there' }));
    const template = JSON.parse(readFileSync(`${MODEL_DIR}/tokenizer_config.json`, 'utf8')).chat_template as string;
    // The messages' ~2 K tokens need a context past the embedded model's 512 for /tokenize to count them.
    const wide = testApp(Object.create(engine, { info: { value: { ...engine.info, maxModelLen: 4096 } } }) as Engine);
    const own = await postJson(wide, '/tokenize', { model: MODEL, messages, chat_template: template });
    expect(own.status, await own.clone().text()).toBe(200);
    const model = await postJson(wide, '/tokenize', { model: MODEL, messages });
    expect((await own.json()).tokens).toEqual((await model.json()).tokens);
  });
});
