/**
 * The checks for a public endpoint, in the app every home serves: the API key (vLLM's
 * --api-key semantics) and the Host header (DNS rebinding).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/engine/types.js';
import { defaultAllowedHosts, hostAllowed } from '../../src/http/security/allowed-hosts.js';
import { apiKeyChecker, bearerToken } from '../../src/http/security/api-key.js';
import { MODEL, expectError, loadEngine, postJson, testApp } from './helpers.js';

let engine: Engine;
beforeAll(async () => {
  engine = await loadEngine();
});
afterAll(() => engine.dispose());

const completion = { model: MODEL, prompt: 'Once upon a time', max_tokens: 2, temperature: 0 };
const bearer = (key: string) => ({ headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` } });

describe('API key', () => {
  it('refuses the inference routes without the key, with 401 in the error shape and WWW-Authenticate', async () => {
    const app = testApp(engine, { apiKey: 'sk-local-1' });
    const routes: Array<[string, unknown]> = [
      ['/v1/completions', completion],
      ['/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2 }],
      ['/generate', { prompt: 'Hi', max_tokens: 2 }],
      ['/tokenize', { model: MODEL, prompt: 'Hi' }],
      ['/detokenize', { model: MODEL, tokens: [1, 2] }],
    ];
    for (const [path, body] of routes) {
      const response = await postJson(app, path, body);
      expect(response.headers.get('www-authenticate')).toBe('Bearer');
      const message = await expectError(response, 401, 'UnauthorizedError');
      expect(message).toMatch(/Authorization: Bearer/);
      expect((await postJson(app, path, body, bearer('sk-local-1'))).status).toBe(200);
    }
    await expectError(app.request('/v1/models'), 401, 'UnauthorizedError');
    expect((await app.request('/v1/models', { headers: { authorization: 'Bearer sk-local-1' } })).status).toBe(200);
  });

  it('refuses a wrong key, a key of another length, another scheme and a key in the wrong header', async () => {
    const app = testApp(engine, { apiKey: 'sk-local-1' });
    for (const authorization of ['Bearer sk-local-2', 'Bearer sk-local-1x', 'Bearer sk-local', 'Basic sk-local-1', 'sk-local-1', 'Bearer ']) {
      await expectError(postJson(app, '/v1/completions', completion, { headers: { 'content-type': 'application/json', authorization } }), 401, 'UnauthorizedError');
    }
    await expectError(postJson(app, '/v1/completions', completion, { headers: { 'content-type': 'application/json', 'x-api-key': 'sk-local-1' } }), 401, 'UnauthorizedError');
    // The scheme is case-insensitive (RFC 9110), the key is not.
    expect((await postJson(app, '/v1/completions', completion, { headers: { 'content-type': 'application/json', authorization: 'bearer sk-local-1' } })).status).toBe(200);
    await expectError(postJson(app, '/v1/completions', completion, bearer('SK-LOCAL-1')), 401, 'UnauthorizedError');
  });

  it('guards the routes however their path is spelled (percent-encoding reaches the same route)', async () => {
    const app = testApp(engine, { apiKey: 'sk-local-1' });
    for (const path of ['/%761/completions', '/v1/%63ompletions', '/%67enerate', '/v1/completions?x=1', '/%74okenize']) {
      expect((await postJson(app, path, completion)).status, path).toBe(401);
    }
  });

  it('accepts any of several keys (rotation)', async () => {
    const app = testApp(engine, { apiKey: ['old-key', 'new-key'] });
    expect((await postJson(app, '/v1/completions', completion, bearer('old-key'))).status).toBe(200);
    expect((await postJson(app, '/v1/completions', completion, bearer('new-key'))).status).toBe(200);
    await expectError(postJson(app, '/v1/completions', completion, bearer('other-key')), 401, 'UnauthorizedError');
  });

  it('leaves /health, /metrics, /version and CORS preflights open', async () => {
    const app = testApp(engine, { apiKey: 'sk-local-1' });
    expect((await app.request('/health')).status).toBe(200);
    expect((await app.request('/metrics')).status).toBe(200);
    expect(await (await app.request('/version')).json()).toHaveProperty('version');
    expect((await app.request('/v1/completions', { method: 'OPTIONS' })).status).not.toBe(401);
  });

  it('asks for nothing when no key is configured', async () => {
    expect((await postJson(testApp(engine), '/v1/completions', completion)).status).toBe(200);
  });

  it('checks the key the same way whatever the guess (digests, no early exit)', async () => {
    const checker = apiKeyChecker(['a'.repeat(40)]);
    expect(await checker.matches('a'.repeat(40))).toBe(true);
    expect(await checker.matches('a'.repeat(39))).toBe(false);
    expect(await checker.matches('')).toBe(false);
    expect(bearerToken('Bearer  abc ')).toBe('abc');
    expect(bearerToken('Bearer a b')).toBeNull();
    expect(bearerToken(null)).toBeNull();
  });
});

describe('allowed hosts (DNS rebinding)', () => {
  const loopbackOnly = defaultAllowedHosts('127.0.0.1')!;

  it('defaults to loopback names on a loopback address and to no check elsewhere', () => {
    expect(defaultAllowedHosts('127.0.0.1')).toEqual(['localhost', '.localhost']);
    expect(defaultAllowedHosts('::1')).toEqual(['localhost', '.localhost']);
    expect(defaultAllowedHosts('localhost')).toEqual(['localhost', '.localhost']);
    expect(defaultAllowedHosts('0.0.0.0')).toBeNull();
    expect(defaultAllowedHosts('10.1.2.3')).toBeNull();
  });

  it('refuses a request under a name the server does not answer to with 403 naming the setting', async () => {
    const app = testApp(engine, { allowedHosts: loopbackOnly });
    const message = await expectError(
      postJson(app, '/v1/completions', completion, { headers: { 'content-type': 'application/json', host: 'rebind.attacker.example:8080' } }),
      403,
      'ForbiddenError',
    );
    expect(message).toMatch(/allowedHosts/);
    expect(message).toMatch(/rebind\.attacker\.example/);
    // The playground and the open routes are guarded too: the page is what a rebinding attack would read.
    await expectError(app.request('/health', { headers: { host: 'rebind.attacker.example' } }), 403, 'ForbiddenError');
  });

  it('accepts the allowed names, their subdomains as configured, and IP literals', async () => {
    const app = testApp(engine, { allowedHosts: [...loopbackOnly, 'llm.example.com'] });
    for (const host of ['localhost:8080', 'LOCALHOST', 'app.localhost:3000', '127.0.0.1:8080', '[::1]:8080', '192.168.1.20', 'llm.example.com']) {
      expect((await app.request('/health', { headers: { host } })).status, host).toBe(200);
    }
    for (const host of ['localhost.attacker.example', 'example.com', 'sub.llm.example.com']) {
      expect((await app.request('/health', { headers: { host } })).status, host).toBe(403);
    }
    expect(hostAllowed('anything.example', ['*'])).toBe(true);
    expect(hostAllowed('a.b.example.com', ['.example.com'])).toBe(true);
    expect(hostAllowed('example.com.', ['.example.com'])).toBe(true);
    expect(hostAllowed('badexample.com', ['.example.com'])).toBe(false);
  });

  it('checks nothing when allowedHosts is null (the default outside loopback)', async () => {
    expect((await testApp(engine).request('/health', { headers: { host: 'anything.example' } })).status).toBe(200);
  });
});
