/**
 * What a chat turn's time to first token holds besides its model call, over the app's whole
 * HTTP path (issue #38's TTFT goals): the conversation bench's growing chat (a 256-token system
 * prompt, 8 turns of 48 + 24 tokens, each prompt the whole history as token ids with the reply's
 * own ids, streamed with logprobs 0 and return_tokens_as_token_ids, as bench/conversation.ts
 * sends it) and a cold 808-token prompt, through createApp's fetch (no socket) on the engine as
 * the server builds it (135M q4, model calls in the worker thread). Per request: from the
 * request to the first SSE chunk; in it, from the request to engine.generate (body, validation,
 * bounds, prompt checks), from there to the prefill's model call being sent (the engine's queue,
 * the lane's wake-up and admission, the prefix lookup), the model call's round trip (the worker's run and its KV writes), and from its
 * answer to the first chunk (the first token's sampling, the delta, the SSE frame). Wall ms on
 * a loaded machine: read shares, not figures.
 *
 *   npx tsx bench/ttft-http-path.ts [rounds=3]
 */
import { parseServerConfig } from '../src/config/server-config.js';
import { createApp } from '../src/http/app.js';
import { LocalEngine } from '../src/engine/local-engine.js';
import { WorkerDecoder } from '../src/engine/model-thread/worker-decoder.js';
import { createNodeEngine } from '../src/runtime/node/engine.js';
import { seededPrompts } from './conversation.js';
import { ensureBenchModel } from './size-models.js';
import { median } from './stats.js';

const rounds = Number(process.argv[2] ?? 3);
const SIZES = { systemTokens: 256, turns: 8, userTokens: 48, replyTokens: 24, coldTokens: 808 };

let prefillCall: { sent: number; answered: number } | null = null;
let generateCalled = NaN;
{
  const proto = LocalEngine.prototype as unknown as { generate(...args: unknown[]): unknown };
  const original = proto.generate;
  proto.generate = function (this: unknown, ...args: unknown[]) {
    generateCalled = performance.now();
    return original.apply(this, args);
  };
}
{
  const proto = WorkerDecoder.prototype as unknown as { run(input: { seqLen: number }): Promise<unknown> };
  const original = proto.run;
  proto.run = async function (this: unknown, input) {
    const sent = performance.now();
    const result = await original.call(this, input);
    if (input.seqLen > 1 && prefillCall === null) prefillCall = { sent, answered: performance.now() };
    return result;
  };
}

const files = await ensureBenchModel();
const engine = await createNodeEngine({ modelDir: files.onnxDir, dtype: 'q4', modelThread: 'worker', servedModelName: 'bench' });
const app = createApp({ engine, config: parseServerConfig({ modelDir: files.onnxDir, servedModelName: 'bench', logRequests: false }) });
const makePrompts = (seed: number) => seededPrompts(seed, files.promptTokenRange);

interface Timing {
  ttft: number;
  /** From the request to engine.generate: the body read, validation, bounds, prompt checks. */
  http: number;
  beforeCall: number;
  call: number;
  afterCall: number;
}

async function turn(prompt: number[], maxTokens: number): Promise<Timing & { ids: number[] }> {
  prefillCall = null;
  const start = performance.now();
  const response = await app.request('/v1/completions', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'bench', prompt, max_tokens: maxTokens, temperature: 0, ignore_eos: true, stream: true, logprobs: 0, return_tokens_as_token_ids: true }),
  });
  if (response.status !== 200) throw new Error(`HTTP ${response.status}: ${await response.text()}`);
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let first = NaN;
  let text = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (Number.isNaN(first)) first = performance.now();
    text += decoder.decode(value, { stream: true });
  }
  const ids = [...text.matchAll(/"token_id:(\d+)"/g)].map((match) => Number(match[1]));
  const call = prefillCall as { sent: number; answered: number } | null;
  if (call === null) throw new Error('no prefill call seen');
  return { ttft: first - start, http: generateCalled - start, beforeCall: call.sent - generateCalled, call: call.answered - call.sent, afterCall: first - call.answered, ids: ids.slice(0, maxTokens) };
}

await turn(makePrompts(1)(64), 4);
await turn(makePrompts(2)(300), 4);
const chat: Timing[] = [];
const cold: Timing[] = [];
for (let round = 0; round < rounds; round++) {
  const make = makePrompts(100 + round);
  let history = make(SIZES.systemTokens);
  for (let index = 0; index < SIZES.turns; index++) {
    history = [...history, ...make(SIZES.userTokens)];
    const result = await turn(history, SIZES.replyTokens);
    if (result.ids.length !== SIZES.replyTokens) throw new Error(`reply of ${result.ids.length} ids`);
    if (index > 0) chat.push(result);
    history = [...history, ...result.ids];
  }
  cold.push(await turn(makePrompts(1000 + round)(SIZES.coldTokens), 1));
}
const row = (label: string, list: Timing[]) =>
  `| ${label} | ${median(list.map((t) => t.ttft)).toFixed(1)} | ${median(list.map((t) => t.http)).toFixed(2)} | ${median(list.map((t) => t.beforeCall)).toFixed(2)} | ${median(list.map((t) => t.call)).toFixed(1)} | ${median(list.map((t) => t.afterCall)).toFixed(2)} |`;
console.log(`135M q4, worker mode, app.fetch, ${rounds} round(s), medians, wall ms (loaded: shares only)`);
console.log('| request | to first SSE chunk | request → engine.generate | → prefill call sent | prefill call round trip | answer → first chunk |');
console.log('| --- | --- | --- | --- | --- | --- |');
console.log(row('chat turns 2–8', chat));
console.log(row(`cold ${SIZES.coldTokens}`, cold));
await engine.dispose();
