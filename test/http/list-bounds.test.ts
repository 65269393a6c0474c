/**
 * Issue 41, family 3: every list and map of a request is bounded after de-duplication and in
 * total, and a request's n sequences share its lists instead of copying them. The audit's
 * reproduction (1.9 M stop_token_ids, n = 32: loop frozen 16.7 s, 1.6 GB) at a small scale:
 * each is a fast 400 with a small body naming the setting, /health answers all along, and the
 * server serves after.
 */
import type { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/engine/types.js';
import { sharedBannedIds, sharedStopIdSet } from '../../src/sampling/shared-id-sets.js';
import { expectNoStall, withHeartbeat } from './heartbeat.js';
import { MODEL, expectErrorBody, loadEngine, postJson, testApp } from './helpers.js';

let engine: Engine;
let app: Hono;
beforeAll(async () => {
  engine = await loadEngine();
  app = testApp(engine);
});
afterAll(() => engine.dispose());

const completion = { model: MODEL, prompt: 'Once upon a time', max_tokens: 4 };
const chat = { model: MODEL, messages: [{ role: 'user', content: 'Hello' }], max_tokens: 4 };
const SMALL_BODY_BYTES = 1024;
const range = <T = number>(length: number, map: (i: number) => T = (i) => i as T): T[] => Array.from({ length }, (_, i) => map(i));
const tool = (i: number) => ({ type: 'function', function: { name: `f${i}`, parameters: { type: 'object', properties: {} } } });

interface Refusal {
  name: string;
  path: string;
  body: () => unknown;
  param: string;
  message: RegExp;
}

const REFUSALS: Refusal[] = [
  { name: '200 000 stop_token_ids with n 32 (the audit\'s 1.9 M at a tenth)', path: '/v1/completions', body: () => ({ ...completion, n: 32, temperature: 1, stop_token_ids: range(200_000) }), param: 'stop_token_ids', message: /at most 65536 values in its lists and maps .*\(maxRequestListItems\).*stop_token_ids: more than 65536/ },
  { name: '2000 distinct stop_token_ids', path: '/v1/completions', body: () => ({ ...completion, stop_token_ids: range(2000) }), param: 'stop_token_ids', message: /at most 1024 distinct token ids \(maxStopTokenIds\), got 2000/ },
  { name: '100 000 stop_token_ids on /generate', path: '/generate', body: () => ({ prompt: 'Hi', max_tokens: 2, stop_token_ids: range(100_000) }), param: 'stop_token_ids', message: /maxRequestListItems/ },
  { name: '2000 distinct stop_token_ids on /generate', path: '/generate', body: () => ({ prompt: 'Hi', max_tokens: 2, stop_token_ids: range(2000) }), param: 'stop_token_ids', message: /maxStopTokenIds/ },
  { name: 'logit_bias with 2000 distinct ids', path: '/v1/completions', body: () => ({ ...completion, logit_bias: Object.fromEntries(range(2000, (i) => [String(i), 1] as const)) }), param: 'logit_bias', message: /at most 1024 entries \(maxLogitBiasEntries\), got 2000/ },
  { name: '200 tools', path: '/v1/chat/completions', body: () => ({ ...chat, tools: range(200, tool) }), param: 'tools', message: /at most 128 tools \(maxTools\), got 200/ },
  { name: '70 000 chat_template_kwargs', path: '/v1/chat/completions', body: () => ({ ...chat, chat_template_kwargs: Object.fromEntries(range(70_000, (i) => [`k${i}`, i] as const)) }), param: 'chat_template_kwargs', message: /maxRequestListItems/ },
  { name: 'lists that each pass but together exceed the total', path: '/v1/chat/completions', body: () => ({ ...chat, documents: range(40_000, (i) => `${i}`), stop_token_ids: range(30_000, () => 1) }), param: 'documents', message: /at most 65536 values .*documents: 40000/ },
];

describe('lists and maps: refused before any work, the server serving all along', () => {
  it.each(REFUSALS)('$name', async ({ path, body, param, message }) => {
    const text = JSON.stringify(body()); // built outside the heartbeat: the client's work
    const { result, report } = await withHeartbeat(app, async () => {
      const response = await postJson(app, path, text);
      return { status: response.status, raw: await response.text() };
    });
    expect(result.status, result.raw.slice(0, 300)).toBe(400);
    expect(result.raw.length).toBeLessThan(SMALL_BODY_BYTES);
    const parsed = JSON.parse(result.raw);
    expectErrorBody(parsed, 400, 'BadRequestError', param);
    expect(parsed.message).toMatch(message);
    expectNoStall(report);
    const plain = await postJson(app, '/v1/completions', completion);
    expect(plain.status).toBe(200);
  });
});

describe('lists are judged after de-duplication', () => {
  it('50 000 copies of one stop id and 500 of one stop string are one of each: served', async () => {
    const response = await postJson(app, '/v1/completions', {
      ...completion,
      n: 4,
      temperature: 1,
      seed: 3,
      min_tokens: 2,
      stop_token_ids: range(50_000, () => 7),
      stop: range(500, () => 'zzzz'),
    });
    expect(response.status, await response.clone().text()).toBe(200);
    const body = await response.json();
    expect(body.choices).toHaveLength(4);
  });

  it('a repeated stop id still stops generation where the single id does', async () => {
    const plain = await (await postJson(app, '/v1/completions', { ...completion, max_tokens: 16, temperature: 0 })).json();
    const ids = (await (await postJson(app, '/tokenize', { model: MODEL, prompt: completion.prompt + plain.choices[0].text, add_special_tokens: false })).json()).tokens as number[];
    const promptIds = (await (await postJson(app, '/tokenize', { model: MODEL, prompt: completion.prompt, add_special_tokens: false })).json()).tokens as number[];
    const stopId = ids[promptIds.length + 2]!;
    const once = await (await postJson(app, '/v1/completions', { ...completion, max_tokens: 16, temperature: 0, stop_token_ids: [stopId] })).json();
    const repeated = await (await postJson(app, '/v1/completions', { ...completion, max_tokens: 16, temperature: 0, stop_token_ids: range(3000, () => stopId) })).json();
    expect(repeated.choices[0]).toEqual(once.choices[0]);
    expect(once.choices[0].finish_reason).toBe('stop');
  });
});

describe("a request's sequences share its token-id sets", () => {
  it('one Set and one banned-id list per request, whatever n is', () => {
    const stopIds = [5, 5, 9];
    const eos = [2];
    expect(sharedStopIdSet(stopIds)).toBe(sharedStopIdSet(stopIds));
    expect([...sharedStopIdSet(stopIds)]).toEqual([5, 9]);
    const banned = sharedBannedIds(eos, stopIds, 8);
    expect(sharedBannedIds(eos, stopIds, 8)).toBe(banned);
    expect([...banned]).toEqual([2, 5]); // distinct, inside the vocabulary
  });
});
