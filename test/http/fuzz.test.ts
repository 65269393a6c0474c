/**
 * A seeded fuzzer over every endpoint: valid bodies with fields replaced by hostile
 * values (huge, tiny, denormal, deep, long, lone surrogates, wrong types), and bodies
 * that are not JSON objects at all. Every answer must be a 2xx or a 4xx in the error
 * shape, no stream may end in a server error, and the server must never stall (the
 * heartbeat of heartbeat.ts runs throughout). Fixed seed: a failure reproduces.
 */
import type { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/engine/types.js';
import { expectNoStall, withHeartbeat } from './heartbeat.js';
import { MODEL, loadEngine, postJson, testApp } from './helpers.js';
import { seededRandom } from '../../scripts/seeded-random.js';

const SEED = 13;
const BODIES = Number(process.env.FUZZ_BODIES ?? 3000);
const CONCURRENCY = Number(process.env.FUZZ_CONCURRENCY ?? 8);

let engine: Engine;
let app: Hono;
beforeAll(async () => {
  engine = await loadEngine();
  // Short sequences keep each generation to a few steps, so thousands of bodies run in seconds.
  app = testApp(engine, { maxSeqLen: 40, maxInputTokenLen: 39, maxIterTimes: 24, trustRequestChatTemplate: true });
});
afterAll(() => engine.dispose());

const random = seededRandom(SEED);
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)];

function deep(depth: number, wrap: (inner: unknown) => unknown, leaf: unknown): unknown {
  let value = leaf;
  for (let i = 0; i < depth; i++) value = wrap(value);
  return value;
}

const NUMBERS = [0, -0, 1, -1, 2, 0.5, 1e-5, 1e-7, 5e-324, 1e-310, 1e308, -1e308, 3.4e38, 127, 128, 129, 511, 512, 513, 2 ** 31, 2 ** 53 + 2, 1e9, -1e9, 0.1, 1.5, 20, 21];
const STRINGS = [
  '', 'x', 'Once upon a time', '\ud800', 'a\udfffb', '\u0000', '😀'.repeat(50), 'x'.repeat(70_000), ' '.repeat(5000),
  '[\\s\\S]{10000}', '[\\s\\S]{1000}', '(a|b)*c', `${'('.repeat(3000)}a${')'.repeat(3000)}`, 'a{1,100000}', '\\b', '(?<=a)b', '[z-a]',
  '{% for i in range(100000000) %}{% endfor %}', '{{ "x" | indent(999999999) }}', '{% for m in messages %}{{ m.content }}{% endfor %}', '{{ raise_exception("no") }}', '{%',
  '{"type": "object"}', '{"type": "string", "maxLength": 1000000}', 'not json', 'stories260k', 'gpt-4', 'never', 'json_object',
];
const SCHEMAS = [
  { type: 'object', properties: { a: { type: 'integer' } }, required: ['a'] },
  deep(250, (inner) => ({ anyOf: [inner, { type: 'integer' }] }), { type: 'string' }),
  deep(40, (inner) => ({ type: 'array', items: inner }), { type: 'integer' }),
  { type: 'string', maxLength: 100_000 },
  { type: 'string', minLength: 5, maxLength: 2 },
  { type: 'object', properties: Object.fromEntries(Array.from({ length: 1500 }, (_, i) => [`p${i}`, { type: 'boolean' }])) },
  { type: 'integer', minimum: 1e300 },
  { enum: ['\ud800'] },
  { $ref: '#/$defs/missing' },
  { type: 'string', pattern: '[\\s\\S]{5000}' },
  { type: 'string', format: 'email' },
];

function randomValue(depth = 0): unknown {
  const kind = random();
  if (kind < 0.3) return pick(NUMBERS);
  if (kind < 0.55) return pick(STRINGS);
  if (kind < 0.62) return pick([true, false, null]);
  if (kind < 0.72) return pick(SCHEMAS);
  if (kind < 0.8) return deep(Math.floor(random() * 600), (inner) => [inner], 1);
  if (kind < 0.88 || depth > 2) return Array.from({ length: pick([0, 1, 3, 300, 20_000]) }, (_, i) => (random() < 0.5 ? i % 600 : `s${i}`));
  return Object.fromEntries(Array.from({ length: 1 + Math.floor(random() * 3) }, () => [pick(FIELDS), randomValue(depth + 1)]));
}

const FIELDS = [
  'prompt', 'messages', 'max_tokens', 'max_completion_tokens', 'n', 'best_of', 'temperature', 'top_p', 'top_k', 'min_p',
  'repetition_penalty', 'presence_penalty', 'frequency_penalty', 'seed', 'stop', 'stop_token_ids', 'logprobs', 'top_logprobs',
  'prompt_logprobs', 'echo', 'stream', 'stream_options', 'use_beam_search', 'length_penalty', 'early_stopping', 'min_tokens',
  'ignore_eos', 'guided_json', 'guided_regex', 'guided_choice', 'guided_grammar', 'guided_whitespace_pattern', 'response_format',
  'chat_template', 'chat_template_kwargs', 'add_generation_prompt', 'continue_final_message', 'logit_bias', 'truncate_prompt_tokens',
  'skip_special_tokens', 'include_stop_str_in_output', 'tokens', 'model', 'add_special_tokens', 'suffix', 'tools', 'documents',
];

const ENDPOINTS: Array<{ path: string; base: () => Record<string, unknown> }> = [
  { path: '/generate', base: () => ({ prompt: 'Once upon a time', max_tokens: 8, temperature: 0.8 }) },
  { path: '/v1/completions', base: () => ({ model: MODEL, prompt: 'Once upon a time', max_tokens: 8 }) },
  { path: '/v1/chat/completions', base: () => ({ model: MODEL, messages: [{ role: 'user', content: 'Hello' }], max_tokens: 8 }) },
  { path: '/tokenize', base: () => ({ prompt: 'Once upon a time' }) },
  { path: '/tokenize', base: () => ({ messages: [{ role: 'user', content: 'Hello' }] }) },
  { path: '/detokenize', base: () => ({ tokens: [1, 403, 407] }) },
];

/**
 * Stands for a number literal too long for any field (101 characters to 1 MB of digits):
 * written into the body text after JSON.stringify, which cannot write one.
 */
const HUGE_LITERAL = '__HUGE_LITERAL__';

function withHugeLiterals(text: string): string {
  return text.replaceAll(`"${HUGE_LITERAL}"`, () => pick(['9'.repeat(101), `0.${'5'.repeat(5000)}`, '-'.concat('8'.repeat(1_000_000)), `1${'0'.repeat(400)}e5`]));
}

/** Values aimed at what each field makes the server do: sizes, counts, depths, degenerate numbers. */
const TARGETED: Record<string, () => unknown> = {
  // Bounds judge values after lax coercion: numbers, numeric strings and other coercible
  // spellings at and past every bound (one request's share is 32 of 64 sequences).
  n: () => pick([2, 32, 33, 64, 65, 128, 129, 1000, 1e9, '32', '33', ' 64 ', '1000000', '1e6', '3.0', 'x', '7'.repeat(5000)]),
  best_of: () => pick([2, 32, 33, 64, 65, 128, 1000, 1e9, '32', '33', '64', '1e9', '7'.repeat(200)]),
  max_tokens: () => pick([1, 39, 40, 1e9, null, '39', '40', '41', '1e9', '2147483648']),
  seed: () => pick([0, -1, '18446744073709551615', '9223372036854775808', '1'.repeat(101), '1'.repeat(100_000), HUGE_LITERAL]),
  top_logprobs: () => pick([0, 20, 21, '20', '21', '1e3']),
  truncate_prompt_tokens: () => pick([1, 39, 40, '40', '1e9']),
  stream: () => pick(['true', 'yes', 1, 0, 'off']),
  echo: () => pick(['true', 1, true]),
  repetition_penalty: () => pick([5e-324, 1e-310, 1e-300, 1e300, 2]),
  temperature: () => pick([1e-5, 1.0000001e-5, 1e308, 0]),
  presence_penalty: () => pick([-2, 2]),
  length_penalty: () => pick([1e308, -1e308, 5e-324]),
  stop: () => pick([Array.from({ length: 20_000 }, (_, i) => `s${i}`), ['x'.repeat(40_000)], ['a', 'e', ' '], 'x']),
  guided_regex: () => pick(['[\\s\\S]{10000}', '[\\s\\S]{1000}', `${'('.repeat(3000)}a${')'.repeat(3000)}`, '(a|b){500}c', '[a-z]{1,40}', 'a\ud800']),
  guided_json: () => pick(SCHEMAS),
  guided_choice: () => pick([['\ud800'], ['yes', 'no'], Array.from({ length: 20_000 }, (_, i) => `c${i}`)]),
  response_format: () => ({ type: 'json_schema', json_schema: { name: 'x', schema: pick(SCHEMAS) } }),
  chat_template: () => pick(['{% for i in range(100000000) %}{% endfor %}', '{% for i in range(3000) %}{% for j in range(3000) %}{% endfor %}{% endfor %}', '{% set ns = namespace(s="xy") %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}', '{{ "a" | indent(999999999) }}', 'x'.repeat(70_000)]),
  // The multi-megabyte values are rare: every body is built before the run starts.
  prompt: () => (random() < 0.05 ? 'x'.repeat(4_500_000) : pick(['Once upon a time '.repeat(2000), [1, 2, 3], Array.from({ length: 20_000 }, (_, i) => i % 500), ''])),
  messages: () =>
    random() < 0.05
      ? [{ role: 'user', content: 'y'.repeat(4_500_000) }]
      : pick([Array.from({ length: 2000 }, () => ({ role: 'user', content: 'x' })), [{ role: 'user', content: '\ud800' }], [{ role: 'system', content: 'a' }, { role: 'user', content: 'b' }]]),
  prompt_logprobs: () => pick([0, 20, 21, '20', '21']),
  logprobs: () => pick([0, 20, 21, true, '20', '21', HUGE_LITERAL]),
  temperature_literal: () => HUGE_LITERAL,
  use_beam_search: () => true,
};

function randomBody(): { path: string; body: string } {
  const endpoint = pick(ENDPOINTS);
  const roll = random();
  if (roll < 0.03) return { path: endpoint.path, body: pick(['', '{', 'null', '[]', '"x"', '{"prompt": 1e999}', '{"a":'.repeat(2000)]) };
  const body = endpoint.base();
  for (let mutations = 1 + Math.floor(random() * 3); mutations > 0; mutations--) {
    if (random() < 0.5) {
      const [field, value] = pick(Object.entries(TARGETED));
      body[field] = value();
      continue;
    }
    const field = pick(FIELDS);
    if (random() < 0.1) delete body[field];
    else body[field] = randomValue();
  }
  return { path: endpoint.path, body: withHugeLiterals(JSON.stringify(body)) };
}

/** An error body in the API's shape: a message, at the top or in OpenAI's nested `error` object. */
function hasErrorMessage(text: string): boolean {
  try {
    const body = JSON.parse(text) as { message?: unknown; error?: { message?: unknown } };
    return typeof (body.message ?? body.error?.message) === 'string';
  } catch {
    return false;
  }
}

describe('fuzzing every endpoint', () => {
  it(`${BODIES} seeded bodies: no 5xx, no server error in a stream, no stall`, async () => {
    const failures: string[] = [];
    const statuses = new Map<number, number>();
    // Made up front: building the bodies must not count as the server stalling.
    const bodies = Array.from({ length: BODIES }, randomBody);
    const started = performance.now();
    const { report } = await withHeartbeat(app, async () => {
      for (let done = 0; done < BODIES; done += CONCURRENCY) {
        const batch = bodies.slice(done, done + CONCURRENCY);
        await Promise.all(
          batch.map(async ({ path, body }) => {
            const response = await postJson(app, path, body);
            const text = await response.text();
            statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
            const serverError = response.status >= 500 || /"code":5\d\d/.test(text);
            const shapeless = response.status >= 400 && !hasErrorMessage(text);
            // An error quotes at most a prefix of any value: no refusal echoes a huge one.
            const echoes = response.status >= 400 && text.length > 4096;
            if (serverError || shapeless || echoes) failures.push(`${path} ${response.status} ${body.slice(0, 300)} -> ${text.slice(0, 300)}`);
          }),
        );
      }
    }, { streamTokens: 30 });
    const figures = { loopLag: report.maxLoopLagMs, heldByWork: report.maxBlockedMs, starved: report.maxStarvedMs, health: report.maxHealthMs, tokenGap: report.maxTokenGapMs };
    console.info(`fuzz: ${BODIES} bodies in ${Math.round(performance.now() - started)} ms, statuses ${JSON.stringify([...statuses])}, ms ${JSON.stringify(figures, (_, v: unknown) => (typeof v === 'number' ? Math.round(v) : v))}`);
    expect(failures).toEqual([]);
    expectNoStall(report);
    // The fuzzer reaches both outcomes: refusals and real generations.
    expect(statuses.get(200) ?? 0).toBeGreaterThan(BODIES / 20);
    expect(statuses.get(400) ?? 0).toBeGreaterThan(BODIES / 4);
  }, 120_000);
});
