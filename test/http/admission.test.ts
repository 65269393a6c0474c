import { afterAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/engine/types.js';
import { createNodeEngine } from '../../src/runtime/node/engine.js';
import { MODEL, MODEL_DIR, expectErrorBody, golden, postJson, testApp } from './helpers.js';

const engines: Engine[] = [];
afterAll(async () => {
  for (const engine of engines) await engine.dispose();
});

async function appWith(limits: { maxRunningSequences?: number; maxWaitingRequests?: number }) {
  const engine = await createNodeEngine({ modelDir: MODEL_DIR, servedModelName: MODEL, limits });
  engines.push(engine);
  return { engine, app: testApp(engine) };
}

const completion = (maxTokens: number, extra: Record<string, unknown> = {}) => ({
  model: MODEL,
  prompt: golden.prompt,
  max_tokens: maxTokens,
  temperature: 0,
  ignore_eos: true,
  ...extra,
});

describe('admission over HTTP', () => {
  it('answers 503 with Retry-After past the waiting limit while admitted requests complete', async () => {
    const { app } = await appWith({ maxRunningSequences: 1, maxWaitingRequests: 2 });
    // One running stream holds the only slot.
    const running = await postJson(app, '/v1/completions', completion(300, { stream: true }));
    expect(running.status).toBe(200);
    const reader = running.body!.getReader();
    await reader.read();
    const queued = [postJson(app, '/v1/completions', completion(20)), postJson(app, '/v1/completions', completion(20))];
    // Let both queued requests reach the engine's waiting queue.
    await new Promise((resolve) => setTimeout(resolve, 20));
    const refused = await postJson(app, '/v1/completions', completion(20));
    expect(refused.status).toBe(503);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expectErrorBody(await refused.json(), 503, 'ServiceUnavailableError');
    // Nothing admitted was harmed.
    let rest = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      rest += new TextDecoder().decode(value);
    }
    expect(rest).toContain('"finish_reason":"length"');
    for (const response of await Promise.all(queued)) {
      expect(response.status).toBe(200);
      const body = (await response.json()) as { choices: { text: string }[] };
      expect(golden.completion_text.startsWith(body.choices[0].text)).toBe(true);
    }
  });

  it('completes a burst of 200 concurrent requests, each exactly once with its own text', async () => {
    const { app } = await appWith({});
    const prompts = ['Once upon a time', 'The dog', 'Lily saw a bird', 'Tom had a red ball', 'One day, the sun'];
    const expected = new Map<string, string>();
    for (const prompt of prompts) {
      const response = await postJson(app, '/v1/completions', { ...completion(24), prompt });
      expected.set(prompt, ((await response.json()) as { choices: { text: string }[] }).choices[0].text);
    }
    const ids = new Set<string>();
    const results = await Promise.all(
      Array.from({ length: 200 }, async (_, i) => {
        const prompt = prompts[i % prompts.length];
        const stream = i % 2 === 0;
        const response = await postJson(app, '/v1/completions', { ...completion(24), prompt, stream, user: `burst-${i}` });
        expect(response.status).toBe(200);
        if (!stream) {
          const body = (await response.json()) as { id: string; choices: { text: string }[] };
          ids.add(body.id);
          return { prompt, text: body.choices[0].text };
        }
        const raw = await response.text();
        const chunks = raw
          .split('\n\n')
          .filter((e) => e.startsWith('data: {'))
          .map((e) => JSON.parse(e.slice(6)) as { id: string; choices: { text: string }[] });
        ids.add(chunks[0].id);
        expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
        expect(raw.endsWith('data: [DONE]\n\n')).toBe(true);
        return { prompt, text: chunks.map((c) => c.choices[0]?.text ?? '').join('') };
      }),
    );
    expect(results).toHaveLength(200);
    expect(ids.size).toBe(200);
    for (const { prompt, text } of results) expect(text).toBe(expected.get(prompt));
  });
});
