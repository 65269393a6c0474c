/**
 * Issue 41, family 9: with API_KEY set, the playground's copy of the served model (weights,
 * tokenizer, config under /playground/model/) answered 200 without a key. It is the
 * operator's model: behind the key like /v1, however the path is spelled; the page itself
 * and /health stay open, and without a key set nothing changes.
 */
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/engine/types.js';
import { playgroundRoutes } from '../../src/runtime/node/static.js';
import { MODEL_DIR, expectError, loadEngine, testApp } from './helpers.js';

let engine: Engine;
let root: string;
beforeAll(async () => {
  engine = await loadEngine();
  root = await mkdtemp(join(tmpdir(), 'playground-key-'));
  await mkdir(join(root, 'public'), { recursive: true });
  await writeFile(join(root, 'public', 'index.html'), '<!doctype html><title>t</title>');
});
afterAll(() => engine.dispose());

/** The app as the Node home builds it: the API first, then the playground's routes. */
function served(apiKey?: string): Hono {
  const app = testApp(engine, apiKey === undefined ? {} : { apiKey });
  app.route('/', playgroundRoutes({ rootDir: root, modelDir: MODEL_DIR }));
  return app;
}

const MODEL_FILES = ['/playground/model/config.json', '/playground/model/tokenizer.json', '/playground/model/tokenizer_config.json'];

describe('the playground model files with an API key set', () => {
  it('refuses each without the key (401, small body) and serves it with the key', async () => {
    const app = served('sk-local-1');
    for (const path of MODEL_FILES) {
      const refused = await app.request(path);
      expect(refused.headers.get('www-authenticate')).toBe('Bearer');
      expect((await refused.clone().text()).length).toBeLessThan(512);
      await expectError(refused, 401, 'UnauthorizedError');
      const allowed = await app.request(path, { headers: { authorization: 'Bearer sk-local-1' } });
      expect(allowed.status, path).toBe(200);
    }
  });

  it('refuses however the path is spelled (percent-encoding, repeated slashes, case)', async () => {
    const app = served('sk-local-1');
    for (const path of ['/playground/%6dodel/config.json', '/playground//model/config.json', '//playground/model/config.json', '/PLAYGROUND/model/config.json', '/playground/model/%63onfig.json']) {
      const response = await app.request(path);
      expect(response.status, path).not.toBe(200);
      const text = await response.text();
      expect(text, path).not.toContain('"vocab_size"');
    }
  });

  it('leaves the page and /health open, and everything open without a key', async () => {
    const keyed = served('sk-local-1');
    expect((await keyed.request('/')).status).toBe(200);
    expect((await keyed.request('/health')).status).toBe(200);
    const open = served();
    for (const path of MODEL_FILES) expect((await open.request(path)).status, path).toBe(200);
  });
});
