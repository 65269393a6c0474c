import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Engine } from '../../src/engine/types.js';
import { MODEL, loadEngine, postJson, testApp } from './helpers.js';

let engine: Engine;
beforeAll(async () => {
  engine = await loadEngine();
});
afterAll(() => engine.dispose());

describe('unknown request fields', () => {
  it('are ignored, with one warning line naming them (vLLM)', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      const app = testApp(engine);
      const chat = await postJson(app, '/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2, reasoning_effort: 'low', tempreature: 0 });
      expect(chat.status).toBe(200);
      expect(warn.mock.calls).toEqual([['The following fields were present in the request but ignored: reasoning_effort, tempreature']]);
      warn.mockClear();
      const completion = await postJson(app, '/v1/completions', { model: MODEL, prompt: 'Hi', max_tokens: 2, metadata: {} });
      expect(completion.status).toBe(200);
      expect(warn.mock.calls).toEqual([['The following fields were present in the request but ignored: metadata']]);
      warn.mockClear();
      await postJson(app, '/v1/completions', { model: MODEL, prompt: 'Hi', max_tokens: 2, temperature: 0 });
      expect(warn).not.toHaveBeenCalled();
    } finally {
      warn.mockRestore();
    }
  });
});
