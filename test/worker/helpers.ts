import { env } from 'cloudflare:workers';
import type { WorkerEnv } from '../../src/runtime/worker/env.js';
import type { WorkerHandler } from '../../src/runtime/worker/handler.js';

/**
 * A Worker environment: wrangler.toml's vars (request log off) with `overrides` on top. Each call is a new
 * object, so the handler builds a new app (and engine) for it: create one per scenario
 * and reuse it across that scenario's requests.
 */
export function workerEnv(overrides: Record<string, unknown> = {}): WorkerEnv {
  const vars: Record<string, unknown> = {};
  for (const key of Object.keys(env)) if (!key.startsWith('TEST_')) vars[key] = env[key];
  // Request log lines off unless a test asks: they would bury the test output.
  return { LOG_REQUESTS: 'false', ...vars, ...overrides };
}

/** A binding the tests' vitest config defines (Node server URL, key-checking proxy). */
export function testBinding<T>(name: string): T {
  const value = env[name];
  if (value === undefined) throw new Error(`The test binding ${name} is missing: see vitest.config.ts.`);
  return value as T;
}

export function postJson(
  handler: WorkerHandler,
  workerEnvironment: WorkerEnv,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
  return handler.fetch(
    new Request(`http://worker.test${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    }),
    workerEnvironment,
  );
}

/** The `data` payloads of an SSE response, read to the end. */
export async function ssePayloads(response: Response): Promise<string[]> {
  const text = await response.text();
  return text
    .split('\n\n')
    .filter((event) => event.startsWith('data: '))
    .map((event) => event.slice('data: '.length));
}

/**
 * A stand-in for an UPSTREAM service binding that records the requests it gets and
 * answers each with a finished one-chunk completion stream saying `text`.
 */
export function recordingUpstream(text: string): {
  fetch(url: string, init: RequestInit): Promise<Response>;
  requests: unknown[];
  /** The bodies as sent, for what JSON.parse would round (64-bit seeds). */
  rawBodies: string[];
} {
  const requests: unknown[] = [];
  const rawBodies: string[] = [];
  return {
    requests,
    rawBodies,
    async fetch(_url, init) {
      rawBodies.push(init.body as string);
      requests.push(JSON.parse(init.body as string));
      const chunk = { choices: [{ index: 0, text, finish_reason: 'stop', stop_reason: null }], usage: { completion_tokens: 3 } };
      return new Response(`data: ${JSON.stringify(chunk)}\n\ndata: [DONE]\n\n`, { headers: { 'content-type': 'text/event-stream' } });
    },
  };
}
