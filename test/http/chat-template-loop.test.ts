/**
 * Issue 24's template family: a chat request of ~1000 messages bought up to 100 K template
 * steps rendered on the event loop (0.2–0.95 s). With Node's template thread a rendering that
 * can be long runs there, under its step budget and maxChatTemplateMs: /health and a running
 * stream go on meanwhile, and the request is served or refused as before.
 */
import type { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/engine/types.js';
import { createNodeTemplateThread } from '../../src/tokenizer/node-template-thread.js';
import type { TemplateThread } from '../../src/tokenizer/template-thread.js';
import { expectNoStall, withHeartbeat } from './heartbeat.js';
import { MODEL, expectErrorBody, loadEngine, postJson, testApp } from './helpers.js';

let engine: Engine;
let thread: TemplateThread & { jobs: number };
/** As npm start builds it: long renderings on the template thread. */
let app: Hono;
/** As workerd and the page render: every rendering on the request's thread. */
let inlineApp: Hono;
beforeAll(async () => {
  engine = await loadEngine();
  const real = createNodeTemplateThread();
  thread = { jobs: 0, render: (...args) => ((thread.jobs += 1), real.render(...args)), close: () => real.close() };
  app = testApp(engine, { trustRequestChatTemplate: true }, { templateThread: thread });
  inlineApp = testApp(engine, { trustRequestChatTemplate: true });
  // The thread starts with its first job (~30–60 ms of this thread's time, once): started here, outside the probes.
  expect((await postJson(app, '/v1/chat/completions', { model: MODEL, messages: messages(40), max_tokens: 1 })).status).toBe(200);
  expect(thread.jobs).toBe(1);
});
afterAll(async () => {
  await thread.close();
  await engine.dispose();
});

/** `count` messages, user and assistant alternating, ending with the user. */
function messages(count: number, content = (i: number) => `Hi ${i}`): Array<{ role: string; content: string }> {
  return Array.from({ length: count }, (_, i) => ({ role: (count - 1 - i) % 2 === 0 ? 'user' : 'assistant', content: content(i) }));
}

// Loops over the conversation for every message: a request's own template that spends its
// whole budget (2000 + 200 steps a message: 202 K for 1000 messages). Rendered on the loop
// (as before, and as workerd does) it held it 230–350 ms of CPU at load 11–14 (the model's
// template over the same messages 70–140 ms); on the thread 22–25 ms.
const HOSTILE_TEMPLATE = "{% for m in messages %}{% for n in messages %}{{ n['content'][:1] }}{% endfor %}{% endfor %}";

/**
 * The loop held (CPU-backed; on Node 20 the whole process's CPU counts, the template thread's
 * included, so load inflates it): a few hundred ms at most. That the work ran on the thread
 * is checked by its job count.
 */
const HELD_BOUND_MS = 300;

/** Sends `body` while the heartbeat runs: rendered on the thread (one job), a 400 naming `param`, the loop free, the server fine after. */
async function expectRefusedFromThread(label: string, body: unknown, param: string, message: RegExp): Promise<void> {
  const jobs = thread.jobs;
  const { result, report } = await withHeartbeat(app, async () => {
    const response = await postJson(app, '/v1/chat/completions', body);
    return { status: response.status, body: await response.json() };
  });
  expect(result.status).toBe(400);
  expectErrorBody(result.body, 400, 'BadRequestError', param);
  expect(result.body.message).toMatch(message);
  expect(thread.jobs).toBe(jobs + 1);
  console.log(`${label}, on the thread: held ${report.maxBlockedMs.toFixed(1)} ms, /health ${report.maxHealthMs.toFixed(1)} ms`);
  expect([...report.healthStatuses]).toEqual([200]);
  expectNoStall(report, HELD_BOUND_MS);
  await expectServes(app);
}

async function expectServes(on: Hono): Promise<void> {
  const response = await postJson(on, '/v1/chat/completions', { model: MODEL, messages: messages(3), max_tokens: 4, temperature: 0 });
  expect(response.status).toBe(200);
  expect((await response.json()).choices[0].message.content.length).toBeGreaterThan(0);
}

describe('1000-message chat requests render off the event loop', () => {
  it("a request's own template that spends its whole budget over 1000 messages: a fast 400 naming chat_template, the loop free", async () => {
    const body = { model: MODEL, messages: messages(1000), max_tokens: 4, chat_template: HOSTILE_TEMPLATE };
    await expectRefusedFromThread('own template, 1000 messages', body, 'chat_template', /took more than 202000 evaluation steps \(a request's own template: 2000 \+ 200 per message/);
  });

  it("the model's template over 1000 messages: rendered on the thread, then a fast 400 for the context, the loop free", async () => {
    await expectRefusedFromThread('model template, 1000 messages', { model: MODEL, messages: messages(1000), max_tokens: 4 }, 'messages', /tokens/);
  });

  it('a long conversation that fits is served as when rendered inline: same prompt tokens, same greedy reply, same /tokenize count', async () => {
    const body = { model: MODEL, messages: messages(61, () => 'Hi'), max_tokens: 8, temperature: 0 };
    const jobs = thread.jobs;
    const threaded = await (await postJson(app, '/v1/chat/completions', body)).json();
    expect(thread.jobs).toBe(jobs + 1);
    const inline = await (await postJson(inlineApp, '/v1/chat/completions', body)).json();
    expect(threaded.usage.prompt_tokens).toBe(inline.usage.prompt_tokens);
    expect(threaded.choices[0].message.content).toBe(inline.choices[0].message.content);
    const counted = await (await postJson(app, '/tokenize', { model: MODEL, messages: body.messages })).json();
    expect(thread.jobs).toBe(jobs + 2);
    expect(counted.count).toBe(threaded.usage.prompt_tokens);
  });

  it('a rendering past maxChatTemplateMs is stopped: a 400 naming it (messages for the model\'s template, chat_template for a request\'s own)', async () => {
    const hurried = testApp(engine, { maxChatTemplateMs: 1, trustRequestChatTemplate: true }, { templateThread: thread });
    const model = await postJson(hurried, '/v1/chat/completions', { model: MODEL, messages: messages(1000), max_tokens: 4 });
    expect(model.status).toBe(400);
    const modelBody = await model.json();
    expectErrorBody(modelBody, 400, 'BadRequestError', 'messages');
    expect(modelBody.message).toMatch(/took more than 1 ms \(maxChatTemplateMs\)/);
    const own = await postJson(hurried, '/v1/chat/completions', { model: MODEL, messages: messages(1000), max_tokens: 4, chat_template: HOSTILE_TEMPLATE });
    expect(own.status).toBe(400);
    const ownBody = await own.json();
    expectErrorBody(ownBody, 400, 'BadRequestError', 'chat_template');
    expect(ownBody.message).toMatch(/maxChatTemplateMs/);
    await expectServes(app);
  });

  it('a 64 K request template is parsed on the thread (it held the loop 80–360 ms parsing here); one that does not parse is a 400 naming chat_template', async () => {
    // Long to parse, cheap to render (a branch never taken) and short in text, within a 3-message request's steps.
    const unit = "{% for m in messages %}{% if m['role'] == 'tool' %}{{ m['content'] | trim }}{% else %}{{ '' }}{% endif %}{% endfor %}";
    const last = "{% endif %}{% for m in messages %}{{ m['role'] + ': ' + m['content'] }}\n{% endfor %}";
    const long = `{% if false %}${unit.repeat(Math.floor((64 * 1024 - last.length - 20) / unit.length))}${last}`;
    const jobs = thread.jobs;
    const { result, report } = await withHeartbeat(app, async () => {
      const served = await postJson(app, '/v1/chat/completions', { model: MODEL, messages: messages(3), max_tokens: 4, temperature: 0, chat_template: long });
      const broken = await postJson(app, '/v1/chat/completions', { model: MODEL, messages: messages(3), max_tokens: 4, chat_template: `${long}{% for %}` });
      return { served: served.status, broken: { status: broken.status, body: await broken.json() } };
    });
    expect(result.served).toBe(200);
    expect(result.broken.status).toBe(400);
    expectErrorBody(result.broken.body, 400, 'BadRequestError', 'chat_template');
    expect(result.broken.body.message).toMatch(/^chat_template is not a valid Jinja template: /);
    expect(thread.jobs).toBe(jobs + 2);
    console.log(`64 K request templates parsed on the thread: held ${report.maxBlockedMs.toFixed(1)} ms`);
    expectNoStall(report, HELD_BOUND_MS);
    // Rendered inline (workerd, the page), the same template gives the same prompt.
    const inline = await (await postJson(inlineApp, '/v1/chat/completions', { model: MODEL, messages: messages(3), max_tokens: 4, temperature: 0, chat_template: long })).json();
    const threaded = await (await postJson(app, '/v1/chat/completions', { model: MODEL, messages: messages(3), max_tokens: 4, temperature: 0, chat_template: long })).json();
    expect(threaded.usage.prompt_tokens).toBe(inline.usage.prompt_tokens);
    expect(threaded.choices[0].message.content).toBe(inline.choices[0].message.content);
  });

  it('a client that leaves while its template renders on the thread stops it and gets a 499', async () => {
    const client = new AbortController();
    const jobs = thread.jobs;
    const pending = postJson(app, '/v1/chat/completions', { model: MODEL, messages: messages(1000), max_tokens: 4, chat_template: HOSTILE_TEMPLATE }, { signal: client.signal });
    while (thread.jobs === jobs) await new Promise((resolve) => setTimeout(resolve, 1));
    client.abort(new Error('client gone'));
    const response = await pending;
    expect(response.status).toBe(499);
    expectErrorBody(await response.json(), 499, 'ClientClosedRequest');
    await expectServes(app);
  });
});
