import { readFileSync } from 'node:fs';
import type { Hono } from 'hono';
import { expect } from 'vitest';
import { parseServerConfig, type ServerConfig } from '../../src/config/server-config.js';
import { createApp, type AppDeps } from '../../src/http/app.js';
import type { Engine } from '../../src/engine/types.js';
import { createNodeEngine } from '../../src/runtime/node/engine.js';
import { nodeGuideCompiler } from '../../src/runtime/node/guides.js';

export const MODEL_DIR = 'models/stories260k';
export const MODEL = 'stories260k';

/** The reference implementation's greedy output for "Once upon a time" (see models README). */
export const golden: { prompt: string; prompt_ids: number[]; completion_ids: number[]; completion_text: string } = JSON.parse(
  readFileSync(new URL('../fixtures/golden-greedy.json', import.meta.url), 'utf8'),
);

export function loadEngine(): Promise<Engine> {
  return createNodeEngine({ modelDir: MODEL_DIR, servedModelName: MODEL });
}

/** The app as `npm start` builds it (structured output on XGrammar included), on `engine`; `deps.templateThread` as npm start passes one. */
export function testApp(engine: Engine, config: Partial<ServerConfig> = {}, deps: Pick<AppDeps, 'templateThread'> = {}): Hono {
  return createApp({
    engine,
    config: parseServerConfig({ modelDir: MODEL_DIR, servedModelName: MODEL, ...config }),
    guideCompiler: nodeGuideCompiler(engine),
    ...deps,
  });
}

export function postJson(app: Hono, path: string, body: unknown, init: RequestInit = {}): Promise<Response> {
  return Promise.resolve(
    app.request(path, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: typeof body === 'string' ? body : JSON.stringify(body),
      ...init,
    }),
  );
}

/**
 * Splits an SSE body into its data payloads, asserting the framing byte for byte: the
 * body is nothing but `data: <payload>\n\n` events.
 */
export function ssePayloads(raw: string): string[] {
  expect(raw).toMatch(/^(data: [^\n]+\n\n)*$/);
  return raw
    .split('\n\n')
    .filter((event) => event !== '')
    .map((event) => event.slice('data: '.length));
}

/** The exact error body: vLLM 0.6's flat fields and OpenAI's nested `error` with the same values. */
export function expectErrorBody(body: unknown, status: number, type: string, param: string | null = null): void {
  expect(Object.keys(body as object).sort()).toEqual(['code', 'error', 'message', 'object', 'param', 'type']);
  const error = body as { object: string; message: string; type: string; param: string | null; code: number; error: unknown };
  expect(error.error).toEqual({ message: error.message, type, param, code: status });
  expect(error.object).toBe('error');
  expect(error.type).toBe(type);
  expect(error.code).toBe(status);
  expect(error.param).toBe(param);
  expect(typeof error.message).toBe('string');
  expect(error.message.length).toBeGreaterThan(0);
  expect(error.message).not.toMatch(/\n\s+at /); // no stack trace
}

export async function expectError(
  response: Response | Promise<Response>,
  status: number,
  type: string,
  param: string | null = null,
): Promise<string> {
  const res = await response;
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  const body = await res.json();
  expectErrorBody(body, status, type, param);
  return (body as { message: string }).message;
}
