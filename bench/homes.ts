/**
 * `BENCH_ONLY=homes npm run bench`: every home against the engine a user would pick there,
 * in ONE run, and one Markdown table of them (bench/results/latest.md, also printed) with
 * the goals of issue 28 beside each ratio:
 * - Node vs llama.cpp's server: the size section (bench/size-section.ts), same weights;
 * - Node vs transformers.js in Node, same ONNX folder (bench/node-peers.ts);
 * - the browser (in-page WASM) vs wllama and transformers.js in the same Chromium
 *   (bench/browser.ts).
 *
 * BENCH_QUICK=1: one size round of 32 tokens, 3 Node-peer rounds of 32 tokens, 3 browser
 * runs of 64 tokens. BENCH_HOMES=size,node,browser picks parts (the table shows the parts run).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { benchBrowser, browserPeerRatios, browserTables, type BrowserResults } from './browser.js';
import { benchNodePeer, nodePeerModels, type NodePeerRow } from './node-peers.js';
import { sizeSection } from './size-section.js';
import { ensureBenchModel } from './size-models.js';
import { benchModelWanted } from './warm-up.js';
import type { SizeResults } from './size.js';

export interface HomesResults {
  date: string;
  machine: string;
  loadAverage: { before: number[]; after: number[] };
  size: SizeResults | null;
  nodePeers: NodePeerRow[];
  browser: BrowserResults | null;
}

/** A goal on a ratio ours ÷ peer: at least (throughput) or at most (TTFT). */
interface Goal {
  atLeast?: number;
  atMost?: number;
}

interface SummaryRow {
  home: string;
  model: string;
  figure: string;
  ours: string;
  peer: string;
  peerValue: string;
  ratio: number;
  goal?: Goal;
}

const fixed = (v: number, digits = 0) => (Number.isFinite(v) ? v.toFixed(digits) : '–');

function goalText(goal: Goal | undefined): string {
  if (!goal) return '–';
  return goal.atLeast !== undefined ? `≥ ${goal.atLeast}` : `≤ ${goal.atMost}`;
}

function verdict(ratio: number, goal: Goal | undefined): string {
  if (!goal || !Number.isFinite(ratio)) return '';
  const met = goal.atLeast !== undefined ? ratio >= goal.atLeast : ratio <= goal.atMost!;
  return met ? 'met' : 'missed';
}

/** Issue 28's goals for the llama.cpp rows, by model, dtype and figure. */
function llamaGoal(model: string, dtype: string, figure: string): Goal | undefined {
  const stories = model.startsWith('stories260K');
  if (stories) return figure === 'one request' ? { atLeast: 1.0 } : figure === '64 streams' ? { atLeast: 3 } : undefined;
  if (dtype === 'q4') {
    return { 'one request': { atLeast: 0.8 }, TTFT: { atMost: 1.0 }, '8 streams': { atLeast: 1.0 }, '32 streams': { atLeast: 1.0 } }[figure];
  }
  return { 'one request': { atLeast: 1.0 }, '8 streams': { atLeast: 1.5 } }[figure];
}

function sizeRows(size: SizeResults): SummaryRow[] {
  const rows: SummaryRow[] = [];
  for (const row of size.rows) {
    const model = `${row.model} ${row.dtype === 'q4' ? 'q4 / Q4_0' : 'fp32 / F32'}`;
    const add = (figure: string, ours: number, peer: number, unit: string, digits = 0) => {
      if (!Number.isFinite(ours) || !Number.isFinite(peer)) return;
      rows.push({
        home: 'Node (HTTP)',
        model,
        figure,
        ours: `${fixed(ours, digits)} ${unit}`,
        peer: 'llama.cpp server (best config)',
        peerValue: `${fixed(peer, digits)} ${unit}`,
        ratio: ours / peer,
        goal: llamaGoal(row.model, row.dtype, figure),
      });
    };
    add('one request', row.ours.singleTokPerSec, row.peerBest.singleTokPerSec, 'tok/s');
    add('TTFT', row.ours.ttftMs, row.peerBest.ttftMs, 'ms', 1);
    for (const count of Object.keys(row.ours.streams).map(Number)) add(`${count} streams`, row.ours.streams[count]!, row.peerBest.streams[count] ?? NaN, 'tok/s');
    add('peak RSS', row.ours.peakRssMiB, row.peerBest.peakRssMiB, 'MiB');
  }
  return rows;
}

function nodePeerRows(nodePeers: NodePeerRow[]): SummaryRow[] {
  return nodePeers.flatMap((row) => {
    const base = { home: 'Node (HTTP)', model: `${row.model} ${row.dtype}`, peer: 'transformers.js in Node (in-process)' };
    return [
      { ...base, figure: 'one request', ours: `${fixed(row.ours.singleTokPerSec)} tok/s`, peerValue: `${fixed(row.transformers.singleTokPerSec)} tok/s`, ratio: row.paired.single, goal: { atLeast: 1.2 } },
      { ...base, figure: 'TTFT', ours: `${fixed(row.ours.ttftMs, 1)} ms`, peerValue: `${fixed(row.transformers.ttftMs, 1)} ms`, ratio: row.paired.ttft },
      {
        ...base,
        figure: '8 streams',
        ours: `${fixed(row.ours.streams8TokPerSec)} tok/s`,
        peerValue: `${fixed(row.transformers.streams8TokPerSec)} tok/s (8 calls ${fixed(row.transformers.concurrent8TokPerSec)}, batch ${fixed(row.transformers.batch8TokPerSec)})`,
        ratio: row.paired.streams8,
        goal: { atLeast: 4 },
      },
    ];
  });
}

function browserRows(browser: BrowserResults): SummaryRow[] {
  return browserPeerRatios(browser).flatMap((r) => {
    const base = { home: `browser WASM, ${r.threads} thread${r.threads === 1 ? '' : 's'}`, model: 'stories260K fp32 / F32', peer: r.peer };
    return [
      {
        ...base,
        figure: 'one request',
        ours: `${fixed(r.ours.oneRequest)} tok/s`,
        peerValue: `${fixed(r.theirs.oneRequest)} tok/s`,
        ratio: r.oneRequestRatio,
        goal: { atLeast: r.peer === 'wllama' ? 1.0 : 1.5 },
      },
      { ...base, figure: 'TTFT', ours: `${fixed(r.ours.prefillMs, 1)} ms`, peerValue: `${fixed(r.theirs.prefillMs, 1)} ms`, ratio: r.ttftRatio },
    ];
  });
}

export function homesMarkdown(results: HomesResults): string {
  const rows = [...(results.size ? sizeRows(results.size) : []), ...nodePeerRows(results.nodePeers), ...(results.browser ? browserRows(results.browser) : [])];
  const load = (l: number[]) => l.map((v) => v.toFixed(2)).join(' / ');
  const lines = [
    `One run of \`BENCH_ONLY=homes npm run bench\` on ${results.date.slice(0, 16).replace('T', ' ')} UTC; machine ${results.machine}; load average ${load(results.loadAverage.before)} before, ${load(results.loadAverage.after)} after (1 / 5 / 15 min).`,
    '',
    '| home | model | figure | ours | peer | peer’s figure | ours ÷ peer | goal | |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rows.map((r) => `| ${r.home} | ${r.model} | ${r.figure} | ${r.ours} | ${r.peer} | ${r.peerValue} | ${fixed(r.ratio, 2)} | ${goalText(r.goal)} | ${verdict(r.ratio, r.goal)} |`),
    '',
    'Ratios are ours ÷ peer (TTFT and RSS: below 1 is better). llama.cpp rows: ratios of medians, llama.cpp at its best thread / parallel setting per figure. transformers.js and browser rows: medians of per-round paired ratios.',
  ];
  return lines.join('\n');
}

export async function benchHomes(): Promise<HomesResults> {
  const quick = process.env.BENCH_QUICK === '1';
  const parts = new Set((process.env.BENCH_HOMES ?? 'size,node,browser').split(','));
  const before = loadavg();
  const size = parts.has('size') ? await sizeSection() : null;
  const nodePeers: NodePeerRow[] = [];
  if (parts.has('node')) {
    const rounds = Number(process.env.BENCH_PEER_ROUNDS ?? (quick ? 3 : 5));
    const maxTokens = Number(process.env.BENCH_TOKENS ?? (quick ? 32 : 128));
    console.log(`\n## Node: our server vs transformers.js in Node, same ONNX folder (${rounds} interleaved rounds, medians, ${maxTokens} tokens)\n`);
    const embedded = fileURLToPath(new URL('../models/stories260k/', import.meta.url));
    const needs135m = benchModelWanted('135m-fp32') || benchModelWanted('135m-q4');
    for (const spec of nodePeerModels(embedded, needs135m ? await ensureBenchModel() : null)) {
      nodePeers.push(await benchNodePeer(spec, { rounds, maxTokens, ttftPromptTokens: 128, log: console.log }));
    }
  }
  let browser: BrowserResults | null = null;
  if (parts.has('browser')) {
    const runs = Number(process.env.BENCH_RUNS ?? (quick ? 3 : 7));
    const tokens = Number(process.env.BENCH_TOKENS ?? (quick ? 64 : 128));
    console.log(`\n## Browser: in-page WASM vs wllama and transformers.js in the same Chromium (${runs} alternating runs, ${tokens} tokens)\n`);
    const configs = [1, 2].flatMap((threads) => ['wasm', 'wllama', 'transformers'].map((side) => `${side}?threads=${threads}`));
    browser = await benchBrowser({ runs, configs, tokens, log: console.log });
    console.log(`\n${browserTables(browser)}`);
  }
  const results: HomesResults = {
    date: new Date().toISOString(),
    machine: `${cpus().length} cores (${cpus()[0]?.model ?? 'unknown'})`,
    loadAverage: { before, after: loadavg() },
    size,
    nodePeers,
    browser,
  };
  const markdown = homesMarkdown(results);
  console.log(`\n## All homes and peers\n\n${markdown}\n`);
  const outDir = fileURLToPath(new URL('./results/', import.meta.url));
  mkdirSync(outDir, { recursive: true });
  const stamp = results.date.slice(0, 19).replace(/:/g, '-');
  writeFileSync(`${outDir}/homes-${stamp}.json`, JSON.stringify(results, null, 2));
  writeFileSync(`${outDir}/latest.md`, `${markdown}\n`);
  console.log(`written: bench/results/homes-${stamp}.json, bench/results/latest.md`);
  return results;
}
