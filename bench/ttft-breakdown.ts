/**
 * Where a chat turn's time to first token goes inside the engine (issue #38's TTFT goals):
 * the conversation bench's growing chat (bench/conversation.ts: a 256-token system prompt,
 * 8 turns of 48 + 24 tokens, each turn's prompt the whole history with the reply's ids) and a
 * cold 808-token prompt, on the 135M-shaped q4 model through createNodeEngine, model calls on
 * THIS thread (so every piece can be timed here; worker mode runs the same pieces there).
 * Per turn: from generate() to the first delta, and in it the prefix-cache lookup (the kept
 * KV copied out), the prefill's session.run and the rest of the decoder call (the new slots
 * joined to the past), the prefix-cache insert, the first token's sampling (group.start);
 * after the first token: the batch's admission (the prefill's KV copied into the batch).
 * Wall and CPU (this process, every thread) per piece. Loaded machine: read ratios.
 *
 *   npx tsx bench/ttft-breakdown.ts [rounds=2] [threads=2]
 */
import { createNodeEngine } from '../src/runtime/node/engine.js';
import { BatchRunner } from '../src/engine/batch-runner.js';
import { OnnxDecoder } from '../src/engine/onnx-decoder.js';
import { PrefixCache } from '../src/engine/prefix-cache/prefix-cache.js';
import { SamplingGroup } from '../src/engine/sequence-group.js';
import { defaultSamplingParams } from '../src/sampling/params.js';
import { seededPrompts } from './conversation.js';
import { ensureBenchModel } from './size-models.js';
import { median } from './stats.js';

const [rounds = 2, threads = 2] = process.argv.slice(2, 4).map(Number);
const SIZES = { systemTokens: 256, turns: 8, userTokens: 48, replyTokens: 24, coldTokens: 808 };

type Piece = 'lookup' | 'session.run' | 'decoder.run rest' | 'insert' | 'first token (start)' | 'admit';
const pieces: Piece[] = ['lookup', 'session.run', 'decoder.run rest', 'insert', 'first token (start)', 'admit'];
let current: Map<Piece, { wall: number; cpu: number }> | null = null;
const prefillShapes: string[] = [];

function timed<T>(piece: Piece, work: () => T): T {
  const wall0 = performance.now();
  const cpu0 = process.cpuUsage();
  const done = (value: T) => {
    if (current !== null) {
      const cpu = process.cpuUsage(cpu0);
      const entry = current.get(piece) ?? { wall: 0, cpu: 0 };
      entry.wall += performance.now() - wall0;
      entry.cpu += (cpu.user + cpu.system) / 1000;
      current.set(piece, entry);
    }
    return value;
  };
  const result = work();
  return result instanceof Promise ? (result.then(done) as T) : done(result);
}

const wrap = <C extends { prototype: object }>(klass: C, method: string, piece: Piece) => {
  const proto = klass.prototype as Record<string, (...args: unknown[]) => unknown>;
  const original = proto[method];
  proto[method] = function (this: unknown, ...args: unknown[]) {
    return timed(piece, () => original.apply(this, args));
  };
};
wrap(PrefixCache, 'lookup', 'lookup');
wrap(PrefixCache, 'insert', 'insert');
wrap(SamplingGroup, 'start', 'first token (start)');
wrap(BatchRunner, 'admitAndEvict', 'admit');
{
  const proto = OnnxDecoder.prototype as unknown as { run(input: { batch: number; seqLen: number; past: { length: number } }): Promise<unknown> };
  const original = proto.run;
  proto.run = async function (this: { session: { run: (...args: unknown[]) => Promise<unknown>; wrapped?: boolean } }, input) {
    const { session } = this;
    if (!session.wrapped) {
      const run = session.run.bind(session);
      session.run = (...args: unknown[]) => timed('session.run', () => run(...args));
      session.wrapped = true;
    }
    if (current !== null && input.seqLen > 1) prefillShapes.push(`${input.batch}×${input.seqLen} on past ${input.past.length}`);
    const wall0 = performance.now();
    const cpu0 = process.cpuUsage();
    const before = current?.get('session.run') ?? { wall: 0, cpu: 0 };
    const sessionBefore = { ...before };
    const result = await original.call(this, input);
    if (current !== null && input.seqLen > 1) {
      const cpu = process.cpuUsage(cpu0);
      const session = current.get('session.run') ?? { wall: 0, cpu: 0 };
      const entry = current.get('decoder.run rest') ?? { wall: 0, cpu: 0 };
      entry.wall += performance.now() - wall0 - (session.wall - sessionBefore.wall);
      entry.cpu += (cpu.user + cpu.system) / 1000 - (session.cpu - sessionBefore.cpu);
      current.set('decoder.run rest', entry);
    }
    return result;
  };
}

const files = await ensureBenchModel();
const engine = await createNodeEngine({ modelDir: files.onnxDir, dtype: 'q4', intraOpNumThreads: threads, modelThread: 'main' });
const makePrompts = (seed: number) => seededPrompts(seed, files.promptTokenRange);

interface Turn {
  ttftWall: number;
  ttftCpu: number;
  cached: number;
  pieces: Map<Piece, { wall: number; cpu: number }>;
}

/** One greedy request: time and CPU to the first delta, the pieces timed until then (and the admission right after), and the reply's ids. */
async function turn(prompt: number[], maxTokens: number): Promise<Turn & { ids: number[] }> {
  const params = defaultSamplingParams({ temperature: 0, maxTokens, ignoreEos: true });
  const measured = new Map<Piece, { wall: number; cpu: number }>();
  current = measured;
  const wall0 = performance.now();
  const cpu0 = process.cpuUsage();
  let ttftWall = NaN;
  let ttftCpu = NaN;
  let cached = 0;
  const ids: number[] = [];
  for await (const delta of engine.generate({ promptTokenIds: prompt, params })) {
    if (Number.isNaN(ttftWall)) {
      ttftWall = performance.now() - wall0;
      const cpu = process.cpuUsage(cpu0);
      ttftCpu = (cpu.user + cpu.system) / 1000;
      cached = delta.cachedPromptTokens ?? 0;
      // The admission runs right after the first delta; stop timing once the next step is under way.
      setTimeout(() => (current = null), 0);
    }
    ids.push(...delta.tokenIds);
  }
  current = null;
  return { ttftWall, ttftCpu, cached, pieces: measured, ids };
}

// Warm-up: the first calls of each shape.
await turn(makePrompts(1)(64), 4);
await turn(makePrompts(2)(300), 4);

const chatTurns: Turn[][] = Array.from({ length: SIZES.turns }, () => []);
const colds: Turn[] = [];
for (let round = 0; round < rounds; round++) {
  const make = makePrompts(100 + round);
  let history = make(SIZES.systemTokens);
  for (let index = 0; index < SIZES.turns; index++) {
    history = [...history, ...make(SIZES.userTokens)];
    const result = await turn(history, SIZES.replyTokens);
    chatTurns[index]!.push(result);
    history = [...history, ...result.ids];
  }
  colds.push(await turn(makePrompts(1000 + round)(SIZES.coldTokens), 1));
}

const fmt = (value: number) => value.toFixed(1);
const row = (label: string, turns: Turn[]) => {
  const cells = pieces.map((piece) => `${fmt(median(turns.map((t) => t.pieces.get(piece)?.wall ?? 0)))}/${fmt(median(turns.map((t) => t.pieces.get(piece)?.cpu ?? 0)))}`);
  return `| ${label} | ${median(turns.map((t) => t.cached))} | ${fmt(median(turns.map((t) => t.ttftWall)))}/${fmt(median(turns.map((t) => t.ttftCpu)))} | ${cells.join(' | ')} |`;
};
console.log(`135M q4, model calls on the main thread, ${threads} intra-op thread(s), ${rounds} round(s), medians; each cell wall/CPU ms (loaded: ratios only)`);
console.log(`| turn | cached | to first delta | ${pieces.join(' | ')} |`);
console.log(`| --- | --- | --- | ${pieces.map(() => '---').join(' | ')} |`);
chatTurns.forEach((turns, index) => console.log(row(`chat turn ${index + 1} (${turns[0]!.cached}+)`, turns)));
const later = chatTurns.slice(1).flat();
console.log(row('chat turns 2–8, per turn', later));
console.log(row(`cold ${SIZES.coldTokens}`, colds));
console.log(`prefill calls seen: ${[...new Set(prefillShapes)].slice(0, 24).join('; ')}`);
await engine.dispose();
