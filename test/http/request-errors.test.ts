import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/engine/types.js';
import { MODEL, expectError, golden, loadEngine, postJson, testApp } from './helpers.js';

let engine: Engine;
beforeAll(async () => {
  engine = await loadEngine();
});
afterAll(() => engine.dispose());

const completion = { model: MODEL, prompt: golden.prompt, max_tokens: 5 };
const chat = { model: MODEL, messages: [{ role: 'user', content: golden.prompt }], max_tokens: 5 };
const ENDPOINTS = ['/generate', '/v1/completions', '/v1/chat/completions'] as const;

describe('malformed requests', () => {
  it.each(ENDPOINTS)('%s: invalid JSON → 400 naming the problem', async (path) => {
    const message = await expectError(postJson(testApp(engine), path, '{"prompt": "x",'), 400, 'BadRequestError');
    expect(message).toMatch(/Invalid JSON/);
  });

  it.each(ENDPOINTS)('%s: empty body → 400', async (path) => {
    await expectError(postJson(testApp(engine), path, ''), 400, 'BadRequestError');
  });

  it.each(ENDPOINTS)('%s: a JSON value that is not an object → 400', async (path) => {
    await expectError(postJson(testApp(engine), path, '[1, 2]'), 400, 'BadRequestError');
  });

  // 415, not 400: the body may be fine, the header is what the client must fix. These are
  // the forms a browser sends cross-site without a CORS preflight.
  it.each(ENDPOINTS)('%s: a non-JSON or missing Content-Type → 415', async (path) => {
    const forms: Record<string, string>[] = [{ 'content-type': 'text/plain' }, { 'content-type': 'application/x-www-form-urlencoded' }, {}];
    for (const headers of forms) {
      const response = testApp(engine).request(path, { method: 'POST', headers, body: new TextEncoder().encode(JSON.stringify(completion)) });
      const message = await expectError(response, 415, 'UnsupportedMediaTypeError');
      expect(message).toMatch(/application\/json/);
    }
  });

  it('with requireJsonContentType off, any body is read as JSON (curl -d sends a form type)', async () => {
    const app = testApp(engine, { requireJsonContentType: false });
    const response = await app.request('/v1/completions', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: JSON.stringify({ ...completion, model: MODEL, max_tokens: 2 }),
    });
    expect(response.status).toBe(200);
  });

  it('a body over maxRequestBytes (16 MiB) → 413 before parsing', async () => {
    const body = `${' '.repeat(17 * 1024 * 1024)}${JSON.stringify(completion)}`;
    const message = await expectError(postJson(testApp(engine), '/v1/completions', body), 413, 'RequestEntityTooLargeError');
    expect(message).toMatch(/larger than 16777216 bytes \(maxRequestBytes\)/);
  });

  it('wrong types and out-of-range values name the parameter', async () => {
    const app = testApp(engine);
    await expectError(postJson(app, '/v1/completions', { ...completion, max_tokens: 'ten' }), 400, 'BadRequestError', 'max_tokens');
    await expectError(postJson(app, '/v1/completions', { ...completion, temperature: -1 }), 400, 'BadRequestError', 'temperature');
    await expectError(postJson(app, '/v1/completions', { ...completion, top_p: 1.5 }), 400, 'BadRequestError', 'top_p');
    await expectError(postJson(app, '/v1/chat/completions', { ...chat, messages: 'hi' }), 400, 'BadRequestError', 'messages');
    await expectError(postJson(app, '/v1/chat/completions', { ...chat, messages: [] }), 400, 'BadRequestError', 'messages');
    await expectError(postJson(app, '/v1/completions', { prompt: golden.prompt }), 400, 'BadRequestError', 'model');
  });

  it('a token id outside the vocabulary → 400', async () => {
    await expectError(postJson(testApp(engine), '/v1/completions', { ...completion, prompt: [1, 100000] }), 400, 'BadRequestError', 'prompt');
  });
});

describe('unknown model', () => {
  it.each([
    ['/v1/completions', completion],
    ['/v1/chat/completions', chat],
  ])('%s → 404 NotFoundError in vLLM words', async (path, body) => {
    const message = await expectError(postJson(testApp(engine), path, { ...body, model: 'gpt-4o' }), 404, 'NotFoundError');
    expect(message).toBe('The model `gpt-4o` does not exist.');
  });
});

describe('prompt too long', () => {
  it('/v1/completions: prompt + max_tokens beyond the context → 400', async () => {
    const message = await expectError(postJson(testApp(engine), '/v1/completions', { ...completion, max_tokens: 510 }), 400, 'BadRequestError', 'max_tokens');
    expect(message).toMatch(/maximum context length is 512 tokens/);
  });

  it('/v1/completions: a prompt filling the whole context → 400', async () => {
    const prompt = Array.from({ length: 600 }, () => 400);
    await expectError(postJson(testApp(engine), '/v1/completions', { ...completion, prompt }), 400, 'BadRequestError', 'prompt');
  });

  it('/v1/chat/completions: the rendered prompt counts → 400', async () => {
    const app = testApp(engine, { maxSeqLen: 8 });
    const message = await expectError(postJson(app, '/v1/chat/completions', { ...chat, max_tokens: 4 }), 400, 'BadRequestError', 'max_tokens');
    expect(message).toMatch(/maximum context length is 8 tokens/);
  });
});

describe('features not supported yet → 400 naming the parameter', () => {
  it.each([
    ['suffix', { suffix: '!' }],
    // Structured output works (test/http/guided.test.ts) except for these two.
    ['guided_grammar', { guided_grammar: 'root ::= "a"' }],
    ['guided_whitespace_pattern', { guided_json: { type: 'object' }, guided_whitespace_pattern: '[ ]?' }],
  ])('/v1/completions %s', async (param, extra) => {
    const message = await expectError(postJson(testApp(engine), '/v1/completions', { ...completion, ...extra }), 400, 'BadRequestError', param);
    expect(message).toMatch(/not (currently )?supported|requires|needs/);
    expect(message.toLowerCase()).toContain(param === 'use_beam_search' ? 'beam search' : param);
  });

  it.each([
    // Tools without tool_choice mean "auto", which needs a tool-call parser.
    ['tools', { tools: [{ type: 'function', function: { name: 'f' } }] }, 'tool_choice'],
    // A JSON Schema keyword the grammar compiler does not implement is refused, not ignored.
    ['response_format', { response_format: { type: 'json_schema', json_schema: { name: 's', schema: { type: 'string', format: 'date' } } } }, 'response_format'],
  ])('/v1/chat/completions %s', async (_name, extra, param) => {
    await expectError(postJson(testApp(engine), '/v1/chat/completions', { ...chat, ...extra }), 400, 'BadRequestError', param);
  });

  it('/v1/chat/completions remote image with the default (empty) media whitelist', async () => {
    const messages = [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is this?' },
          { type: 'image_url', image_url: { url: 'https://example.com/cat.png' } },
        ],
      },
    ];
    const message = await expectError(
      postJson(testApp(engine), '/v1/chat/completions', { ...chat, messages }),
      400,
      'BadRequestError',
      'messages[0].content[1].image_url.url',
    );
    expect(message).toBe(
      'messages[0].content[1].image_url.url: the host "example.com" is not in ALLOWED_MEDIA_DOMAINS_ENV (the list is empty: remote media is disabled)',
    );
  });

  it('/v1/chat/completions text content parts are accepted', async () => {
    const messages = [{ role: 'user', content: [{ type: 'text', text: golden.prompt }] }];
    const response = await postJson(testApp(engine), '/v1/chat/completions', { ...chat, messages, temperature: 0, max_tokens: 3 });
    expect(response.status).toBe(200);
    expect((await response.json()).choices[0].message.content).toBe(', there was');
  });
});

describe('routing', () => {
  it('unknown route → 404 in the error shape', async () => {
    await expectError(testApp(engine).request('/v1/no-such-endpoint', { method: 'POST' }), 404, 'NotFoundError');
  });

  it('wrong method → 405 with Allow', async () => {
    const response = await testApp(engine).request('/v1/chat/completions');
    expect(response.headers.get('allow')).toBe('POST');
    await expectError(response, 405, 'MethodNotAllowedError');
    await expectError(testApp(engine).request('/v1/models', { method: 'POST' }), 405, 'MethodNotAllowedError');
  });
});
