/**
 * What the GGUF parity tests share: `npm start` and llama.cpp's server (test/worker/llama-server.ts)
 * on the same file, requests to both, and the comparison of greedy text up to a near tie.
 */
import { expect } from 'vitest';
import { spawnServer, type RunningServer } from '../e2e/spawn-server.js';
import { startLlamaServer } from '../worker/llama-server.js';

export const FIXTURES = new URL('../fixtures/gguf/', import.meta.url).pathname;
/** A departure is a near tie when llama.cpp's token was within this many nats of our best one. */
export const NEAR_TIE = 1;
export const MAX_TOKENS = 24;

export interface Pair {
  ours: RunningServer;
  llama: { url: string; stop(): Promise<void> };
  model: string;
}

/** Both servers on `file` (a fixture name), ours building its graph into `cacheDir`. */
export async function startPair(file: string, cacheDir: string, llamaArgs: string[] = []): Promise<Pair> {
  const model = `${FIXTURES}${file}`;
  const [ours, llama] = await Promise.all([
    spawnServer({ MODEL_DIR: model, GGUF_CACHE_DIR: cacheDir }),
    startLlamaServer({ model, alias: file, args: ['-c', '2048', '--parallel', '4', '--jinja', ...llamaArgs] }),
  ]);
  if ('error' in llama) {
    await ours.stop();
    throw new Error(llama.error);
  }
  return { ours, llama, model: file };
}

export async function post(url: string, path: string, body: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const json = (await response.json()) as Record<string, unknown>;
  if (!response.ok) throw new Error(`${path} ${response.status}: ${JSON.stringify(json)}`);
  return json;
}

export interface Choice {
  text?: string;
  message?: { content: string };
  finish_reason?: string;
  logprobs?: { tokens: string[]; top_logprobs: Array<Record<string, number>> } | { content: Array<{ token: string; top_logprobs: Array<{ token: string; logprob: number }> }> };
}

const choiceOf = (json: Record<string, unknown>) => (json.choices as Choice[])[0];

export async function completion(url: string, model: string, prompt: string, logprobs = false): Promise<Choice> {
  return choiceOf(await post(url, '/v1/completions', { model, prompt, max_tokens: MAX_TOKENS, temperature: 0, ...(logprobs ? { logprobs: 5 } : {}) }));
}

export type Messages = Array<{ role: string; content: string }>;

export async function chat(url: string, model: string, messages: Messages, logprobs = false): Promise<Choice> {
  return choiceOf(
    await post(url, '/v1/chat/completions', {
      model,
      messages,
      max_tokens: MAX_TOKENS,
      temperature: 0,
      ...(logprobs ? { logprobs: true, top_logprobs: 5 } : {}),
    }),
  );
}

/** Our tokens, each with the alternatives we scored (log-probabilities), from a completion's or a chat's logprobs. */
function tokensWithAlternatives(choice: Choice): Array<{ token: string; alternatives: Array<[string, number]> }> {
  const logprobs = choice.logprobs!;
  if ('content' in logprobs) {
    return logprobs.content.map((entry) => ({ token: entry.token, alternatives: entry.top_logprobs.map((top) => [top.token, top.logprob]) }));
  }
  return logprobs.tokens.map((token, i) => ({ token, alternatives: Object.entries(logprobs.top_logprobs[i]) }));
}

/**
 * llama.cpp's text equals ours, or departs from it where its token was within NEAR_TIE
 * nats of our best one (a near tie): returns how many of our tokens it matched before that.
 */
export function expectSameUpToNearTie(label: string, ours: Choice, theirs: string): number {
  const tokens = tokensWithAlternatives(ours);
  let at = 0;
  for (const [i, { token, alternatives }] of tokens.entries()) {
    const rest = theirs.slice(at);
    if (token === '' || rest.startsWith(token)) {
      at += token.length;
      continue;
    }
    const best = Math.max(...alternatives.map(([, logprob]) => logprob));
    const theirsAmongOurs = alternatives.filter(([alternative]) => alternative !== '' && alternative !== token && rest.startsWith(alternative));
    const seen = { label, position: i, ours: token, theirs: rest.slice(0, 12), alternatives };
    expect({ nearTie: theirsAmongOurs.some(([, logprob]) => best - logprob < NEAR_TIE), seen }).toEqual({ nearTie: true, seen });
    return i;
  }
  expect(theirs.slice(at)).toBe('');
  return tokens.length;
}
