/**
 * What the GGUF parity tests share: `npm start` and llama.cpp's server (test/worker/llama-server.ts)
 * on the same file, requests to both, and the comparison of greedy text up to a near tie.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import { ggufModelFolder } from '../../src/gguf/node-gguf.js';
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
async function startPair(file: string, cacheDir: string, llamaArgs: string[] = []): Promise<Pair> {
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

/**
 * For a test file: a pair on each fixture for the whole file, by fixture name. The graphs are
 * built first, one file at a time, so the servers (started all at once on shared cores) only
 * reuse the cache folders; `llamaArgs` are llama-server's extra arguments (e.g. an f32 KV cache).
 */
export function pairsFor(fixtures: Array<{ file: string; llamaArgs?: string[] }>): Record<string, Pair> {
  const pairs: Record<string, Pair> = {};
  const cacheDir = mkdtempSync(join(tmpdir(), 'gguf-parity-'));
  beforeAll(async () => {
    process.env.GGUF_CACHE_DIR = cacheDir;
    for (const { file } of fixtures) await ggufModelFolder(join(FIXTURES, file));
    delete process.env.GGUF_CACHE_DIR;
    const started = await Promise.allSettled(fixtures.map(({ file, llamaArgs }) => startPair(file, cacheDir, llamaArgs)));
    for (const result of started) if (result.status === 'fulfilled') pairs[result.value.model] = result.value;
    const failed = started.find((result) => result.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
  }, 240_000);
  afterAll(async () => {
    await Promise.all(Object.values(pairs).flatMap((pair) => [pair.ours.stop(), pair.llama.stop()]));
    rmSync(cacheDir, { recursive: true, force: true });
  });
  return pairs;
}

/** llama.cpp's KV cache in float32, as ours: its float runs then differ from ours only by kernel rounding. */
export const F32_KV = ['-ctk', 'f32', '-ctv', 'f32'];

/** /tokenize equal on both servers for every text (special tokens parsed, BOS added, as a prompt is). */
export async function expectSameTokens({ ours, llama, model }: Pair, texts: readonly string[]): Promise<void> {
  for (const text of texts) {
    const theirs = (await post(llama.url, '/tokenize', { content: text, add_special: true, parse_special: true })).tokens;
    const mine = (await post(ours.url, '/tokenize', { model, prompt: text })).tokens;
    expect({ text, tokens: mine }).toEqual({ text, tokens: theirs });
  }
}

/** Every greedy completion token for token llama.cpp's, each request alone and all of them at once. */
export async function expectSameGreedyCompletions({ ours, llama, model }: Pair, prompts: readonly string[]): Promise<void> {
  const reference = await Promise.all(prompts.map(async (prompt) => (await completion(llama.url, model, prompt)).text));
  expect(new Set(reference).size).toBe(prompts.length);
  const alone: string[] = [];
  for (const prompt of prompts) alone.push((await completion(ours.url, model, prompt)).text!);
  expect(alone).toEqual(reference);
  const batched = await Promise.all(prompts.map(async (prompt) => (await completion(ours.url, model, prompt)).text));
  expect(batched).toEqual(reference);
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
