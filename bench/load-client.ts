/**
 * A load client for any OpenAI-compatible `/v1/completions` server (this project's and
 * llama.cpp's), prompts given as token ids so both sides see exactly the same input.
 * node:http, no fetch: fetch's web streams would cost the client (on the same 2 cores)
 * several times more CPU per chunk.
 */
import http from 'node:http';

export interface CompletionTarget {
  label: string;
  url: string;
  model: string;
  /** Fields only this server knows (llama.cpp: cache_prompt false). */
  extraBody?: Record<string, unknown>;
  /**
   * llama.cpp's server closes the socket after each streamed response while advertising
   * keep-alive: a reused connection would fail, so it gets a fresh one per request.
   */
  keepAlive: boolean;
}

const keepAliveAgent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
const freshAgent = new http.Agent({ keepAlive: false, maxSockets: Infinity });

function body(target: CompletionTarget, prompt: readonly number[], maxTokens: number, stream: boolean): string {
  return JSON.stringify({
    model: target.model,
    prompt,
    max_tokens: maxTokens,
    temperature: 0,
    ignore_eos: true,
    stream,
    ...target.extraBody,
  });
}

/**
 * POSTs `payload` to `url` over `agent`; `onData` sees each piece of the response body as
 * it arrives. Latin-1 keeps every byte as one character: the markers searched for are ASCII.
 */
export function postBody(url: string, payload: string, agent: http.Agent, onData: (chunk: string) => void): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      url,
      { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } },
      (response) => {
        response.setEncoding('latin1');
        response.on('data', onData);
        response.on('end', () => resolve(response.statusCode ?? 0));
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end(payload);
  });
}

function post(target: CompletionTarget, payload: string, onData: (chunk: string) => void): Promise<number> {
  return postBody(`${target.url}/v1/completions`, payload, target.keepAlive ? keepAliveAgent : freshAgent, onData);
}

/** One non-streaming completion: generated tokens per second of wall time. */
export async function completionTokensPerSecond(target: CompletionTarget, prompt: readonly number[], maxTokens: number): Promise<number> {
  const start = performance.now();
  let text = '';
  const status = await post(target, body(target, prompt, maxTokens, false), (chunk) => (text += chunk));
  const seconds = (performance.now() - start) / 1000;
  if (status !== 200) throw new Error(`${target.label}: HTTP ${status}: ${text.slice(0, 500)}`);
  const tokens = (JSON.parse(text) as { usage?: { completion_tokens?: number } }).usage?.completion_tokens ?? maxTokens;
  if (tokens !== maxTokens) throw new Error(`${target.label}: ${tokens} tokens generated, asked for ${maxTokens} with ignore_eos`);
  return tokens / seconds;
}

export interface StreamTiming {
  /** ms from sending to the first chunk with text. */
  ttftMs: number;
  totalMs: number;
}

/**
 * One streaming completion. Tokens are counted as max_tokens (ignore_eos): both servers may
 * hold back a token that ends inside a UTF-8 character, so chunks are not tokens.
 */
export async function streamTiming(target: CompletionTarget, prompt: readonly number[], maxTokens: number): Promise<StreamTiming> {
  const start = performance.now();
  let first = NaN;
  let buffer = '';
  const status = await post(target, body(target, prompt, maxTokens, true), (chunk) => {
    if (Number.isNaN(first) && chunk.includes('"choices"')) first = performance.now();
    buffer = (buffer + chunk).slice(-300);
  });
  const totalMs = performance.now() - start;
  if (status !== 200) throw new Error(`${target.label}: HTTP ${status}: ${buffer}`);
  return { ttftMs: first - start, totalMs };
}

/** Decode rate of one stream after its first token. */
export function decodeTokensPerSecond(timing: StreamTiming, maxTokens: number): number {
  return (maxTokens - 1) / ((timing.totalMs - timing.ttftMs) / 1000);
}

/** `prompts.length` simultaneous streams: aggregate generated tokens per second. */
export async function aggregateTokensPerSecond(target: CompletionTarget, prompts: ReadonlyArray<readonly number[]>, maxTokens: number): Promise<number> {
  const start = performance.now();
  await Promise.all(prompts.map((prompt) => streamTiming(target, prompt, maxTokens)));
  return (prompts.length * maxTokens) / ((performance.now() - start) / 1000);
}
