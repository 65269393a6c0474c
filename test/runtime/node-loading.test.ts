/** The Node server's answers while its model loads (runtime/node/loading.ts): vLLM's not-ready /health, and a 503 that says why. */
import { describe, expect, it } from 'vitest';
import { loadingFetch } from '../../src/runtime/node/loading.js';

describe('the answers while the model loads', () => {
  const state = { model: 'onnx-community/SmolLM2-135M-Instruct', stage: 'reading the model files' };
  const fetch = loadingFetch(state);

  it('answers /health with a bare 503, as vLLM does when not ready', async () => {
    const response = fetch(new Request('http://127.0.0.1:8080/health'));
    expect(response.status).toBe(503);
    expect(await response.text()).toBe('');
  });

  it('answers /v1/models and the API with a 503 naming the model and the stage', async () => {
    state.stage = 'creating the onnxruntime session';
    for (const path of ['/v1/models', '/v1/chat/completions', '/generate']) {
      const response = fetch(new Request(`http://127.0.0.1:8080${path}`, { method: path === '/v1/models' ? 'GET' : 'POST' }));
      expect(response.status).toBe(503);
      expect(response.headers.get('retry-after')).toBe('1');
      const body = await response.json();
      expect(body.error.message).toBe(
        'The server is starting: the model "onnx-community/SmolLM2-135M-Instruct" is loading (creating the onnxruntime session). Retry shortly.',
      );
    }
  });
});
