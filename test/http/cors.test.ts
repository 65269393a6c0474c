import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/engine/types.js';
import { MODEL, loadEngine, postJson, testApp } from './helpers.js';

let engine: Engine;
beforeAll(async () => {
  engine = await loadEngine();
});
afterAll(() => engine.dispose());

const ORIGIN = 'https://app.example';
const preflight = (headers: Record<string, string> = {}) => ({
  method: 'OPTIONS',
  headers: { origin: ORIGIN, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type, authorization', ...headers },
});

describe('CORS', () => {
  it('answers a preflight on every route (and unknown paths) with everything allowed by default', async () => {
    const app = testApp(engine);
    for (const path of ['/v1/chat/completions', '/v1/completions', '/generate', '/v1/models', '/v1/models/stories260k', '/tokenize', '/health', '/no/such/route']) {
      const response = await app.request(path, preflight());
      expect(response.status, path).toBe(204);
      expect(response.headers.get('access-control-allow-origin')).toBe('*');
      expect(response.headers.get('access-control-allow-methods')).toContain('POST');
      expect(response.headers.get('access-control-allow-headers')).toBe('content-type,authorization');
    }
  });

  it('puts the origin header on answers and on errors', async () => {
    const app = testApp(engine);
    const ok = await postJson(app, '/v1/completions', { model: MODEL, prompt: 'Hi', max_tokens: 2 }, { headers: { 'content-type': 'application/json', origin: ORIGIN } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe('*');
    const bad = await postJson(app, '/v1/completions', { model: MODEL, prompt: 'Hi', top_p: 0 }, { headers: { 'content-type': 'application/json', origin: ORIGIN } });
    expect(bad.status).toBe(400);
    expect(bad.headers.get('access-control-allow-origin')).toBe('*');
    const stream = await postJson(app, '/v1/completions', { model: MODEL, prompt: 'Hi', max_tokens: 2, stream: true }, { headers: { 'content-type': 'application/json', origin: ORIGIN } });
    expect(stream.headers.get('access-control-allow-origin')).toBe('*');
    await stream.text();
  });

  it('allows only the configured origins, methods and headers', async () => {
    const app = testApp(engine, { corsAllowedOrigins: [ORIGIN], corsAllowedMethods: ['POST'], corsAllowedHeaders: ['content-type'], corsAllowCredentials: true });
    const allowed = await app.request('/v1/chat/completions', preflight());
    expect(allowed.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    expect(allowed.headers.get('access-control-allow-methods')).toBe('POST');
    expect(allowed.headers.get('access-control-allow-headers')).toBe('content-type');
    expect(allowed.headers.get('access-control-allow-credentials')).toBe('true');
    const other = await app.request('/v1/chat/completions', preflight({ origin: 'https://evil.example' }));
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('refuses credentials with any origin at startup: any page (Origin: null included) could make credentialed requests', () => {
    expect(() => testApp(engine, { corsAllowCredentials: true })).toThrow(/corsAllowCredentials with corsAllowedOrigins "\*"/);
    expect(() => testApp(engine, { corsAllowCredentials: true, corsAllowedOrigins: ['https://a.example', '*'] })).toThrow(/corsAllowCredentials/);
  });

  it('on an actual request: the allowed origin, credentials and Vary: Origin; nothing for another origin', async () => {
    const app = testApp(engine, { corsAllowedOrigins: [ORIGIN], corsAllowCredentials: true });
    const allowed = await app.request('/v1/models', { headers: { origin: ORIGIN } });
    expect(allowed.status).toBe(200);
    expect(allowed.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    expect(allowed.headers.get('access-control-allow-credentials')).toBe('true');
    expect(allowed.headers.get('vary')).toBe('Origin');
    const other = await app.request('/v1/models', { headers: { origin: 'https://evil.example' } });
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    expect(other.headers.get('vary')).toBe('Origin');
    const open = await testApp(engine).request('/v1/models', { headers: { origin: ORIGIN } });
    expect(open.headers.get('vary')).toBeNull();
  });
});
