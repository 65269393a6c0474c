/**
 * A GGUF served by `npm start` beside llama.cpp's server on the same file, and the requests
 * the parity tests compare (llama-server-parity.test.ts, architecture-parity.test.ts).
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { ggufModelFolder } from '../../src/gguf/node-gguf.js';
import { spawnServer, type RunningServer } from '../e2e/spawn-server.js';
import { startLlamaServer } from '../worker/llama-server.js';

export const FIXTURES = new URL('../fixtures/gguf/', import.meta.url).pathname;
/** Nats: llama.cpp's token may differ from ours where it was this close to our best. */
export const NEAR_TIE = 1;
export const PROMPTS = ['Once upon a time', 'The little dog', 'Lily and Tom went to the park. They', 'One day, a big'];
export const MAX_TOKENS = 24;

export interface Pair {
  ours: RunningServer;
  llama: { url: string; stop(): Promise<void> };
  model: string;
}

/** Both servers on test/fixtures/gguf/<file>; ours caches its graph in `cacheDir`. */
export async function startPair(file: string, cacheDir: string, llamaArgs: string[] = []): Promise<Pair> {
  const model = join(FIXTURES, file);
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
  logprobs?: { tokens: string[]; top_logprobs: Array<Record<string, number>> } | { content: Array<{ token: string; top_logprobs: Array<{ token: string; logprob: number }> }> };
}

export const choiceOf = (json: Record<string, unknown>) => (json.choices as Choice[])[0];

export async function completion(url: string, model: string, prompt: string, logprobs = false): Promise<Choice> {
  return choiceOf(await post(url, '/v1/completions', { model, prompt, max_tokens: MAX_TOKENS, temperature: 0, ...(logprobs ? { logprobs: 5 } : {}) }));
}

export type Messages = Array<{ role: string; content: string }>;

export const chatMessages = (prompt: string): Messages => [
  { role: 'system', content: 'You tell short stories.' },
  { role: 'user', content: prompt },
];

/** A chat on `prompt` (a system and a user turn: chatMessages) or on the messages given. */
export async function chat(url: string, model: string, prompt: string | Messages, logprobs = false): Promise<Choice> {
  return choiceOf(
    await post(url, '/v1/chat/completions', {
      model,
      messages: typeof prompt === 'string' ? chatMessages(prompt) : prompt,
      max_tokens: MAX_TOKENS,
      temperature: 0,
      ...(logprobs ? { logprobs: true, top_logprobs: 5 } : {}),
    }),
  );
}

/**
 * llama-server's greedy chat reply as generated: its tokens (logprobs), not message.content,
 * which its parser for some templates trims (Qwen3's: the reply's leading whitespace) where
 * vLLM, without a reasoning parser, returns the text as generated (as this server does).
 */
export async function llamaChatGenerated(url: string, model: string, prompt: string | Messages): Promise<string> {
  const choice = await chat(url, model, prompt, true);
  return tokensWithAlternatives(choice).map(({ token }) => token).join('');
}

/** Our tokens, each with the alternatives we scored (log-probabilities), from a completion's or a chat's logprobs. */
export function tokensWithAlternatives(choice: Choice): Array<{ token: string; alternatives: Array<[string, number]> }> {
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


/**
 * Starts one pair per file into `pairs`: the graphs are built first, one file at a time, so the
 * servers (started all at once on shared cores) only reuse the cache folders.
 */
export async function startPairs(files: ReadonlyArray<readonly [file: string, llamaArgs: string[]]>, cacheDir: string, pairs: Record<string, Pair>): Promise<void> {
  process.env.GGUF_CACHE_DIR = cacheDir;
  try {
    for (const [file] of files) await ggufModelFolder(join(FIXTURES, file));
  } finally {
    delete process.env.GGUF_CACHE_DIR;
  }
  const started = await Promise.allSettled(files.map(([file, args]) => startPair(file, cacheDir, args)));
  for (const result of started) if (result.status === 'fulfilled') pairs[result.value.model] = result.value;
  const failed = started.find((result) => result.status === 'rejected');
  if (failed) throw (failed as PromiseRejectedResult).reason;
}

export async function stopPairs(pairs: Record<string, Pair>, cacheDir: string): Promise<void> {
  await Promise.all(Object.values(pairs).flatMap((pair) => [pair.ours.stop(), pair.llama.stop()]));
  rmSync(cacheDir, { recursive: true, force: true });
}

/** /tokenize (with special tokens and BOS as a prompt gets them) gives llama.cpp's ids for every text. */
export async function expectTokenizesAsLlama({ ours, llama, model }: Pair, texts: readonly string[]): Promise<void> {
  for (const text of texts) {
    const theirs = (await post(llama.url, '/tokenize', { content: text, add_special: true, parse_special: true })).tokens;
    const mine = (await post(ours.url, '/tokenize', { model, prompt: text })).tokens;
    expect({ text, tokens: mine }).toEqual({ text, tokens: theirs });
  }
}

/**
 * Greedy completions and chat replies on PROMPTS as llama.cpp's up to a near tie (most tokens
 * agree), and our batched completions equal our solo ones.
 */
export async function expectGreedyAsLlamaUpToNearTie({ ours, llama, model }: Pair): Promise<void> {
  let matched = 0;
  for (const prompt of PROMPTS) {
    const theirs = (await completion(llama.url, model, prompt)).text!;
    matched += expectSameUpToNearTie(`completion of ${prompt}`, await completion(ours.url, model, prompt, true), theirs);
    const theirChat = await llamaChatGenerated(llama.url, model, prompt);
    matched += expectSameUpToNearTie(`chat on ${prompt}`, await chat(ours.url, model, prompt, true), theirChat);
  }
  // Most tokens agree: a near tie is rare.
  expect(matched).toBeGreaterThan(PROMPTS.length * 2 * MAX_TOKENS * 0.5);
  const alone = await Promise.all(PROMPTS.map(async (prompt) => (await completion(ours.url, model, prompt)).text));
  const batched = await Promise.all(PROMPTS.map(async (prompt) => (await completion(ours.url, model, prompt)).text));
  expect(batched).toEqual(alone);
}

/** Greedy completions on PROMPTS equal llama.cpp's token for token, alone (one at a time) and batched. */
export async function expectSameGreedyCompletions({ ours, llama, model }: Pair): Promise<void> {
  const reference = await Promise.all(PROMPTS.map(async (prompt) => (await completion(llama.url, model, prompt)).text));
  expect(new Set(reference).size).toBe(PROMPTS.length);
  const alone: string[] = [];
  for (const prompt of PROMPTS) alone.push((await completion(ours.url, model, prompt)).text!);
  expect(alone).toEqual(reference);
  const batched = await Promise.all(PROMPTS.map(async (prompt) => (await completion(ours.url, model, prompt)).text));
  expect(batched).toEqual(reference);
}

/** Greedy chat replies through the file's template equal what llama.cpp generated. */
export async function expectSameGreedyChats({ ours, llama, model }: Pair): Promise<void> {
  const reference = await Promise.all(PROMPTS.map((prompt) => llamaChatGenerated(llama.url, model, prompt)));
  const mine = await Promise.all(PROMPTS.map(async (prompt) => (await chat(ours.url, model, prompt)).message!.content));
  expect(mine).toEqual(reference);
}
