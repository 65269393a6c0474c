/**
 * Greedy agreement of this engine with llama.cpp on the low-bit fixtures
 * (test/fixtures/gguf/tiny-qwen3-*.gguf): for each reference sequence of lowbit-logits.json,
 * 16 greedy tokens from our quantized graph (MatMulNBits, float32 activations) and from
 * libllama (node-llama-cpp's prebuilt CPU build, scripts/gguf/gguf-greedy-probe.mjs run from
 * $NODE_LLAMA_CPP_DIR, default the bundle scripts/peer/build-llama-server.sh installs; llama.cpp
 * rounds activations to 8 bits in quantized dot products), and where they part, our logit gap
 * between the two choices. FILES=a.gguf,b.gguf picks other fixtures.
 *
 * Usage: npx tsx scripts/gguf/lowbit-agreement.ts
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fixtureModel, forward, fusedSession } from '../../test/gguf/gguf-sessions.js';

const STEPS = 16;
const npm = process.env.NODE_LLAMA_CPP_DIR ?? join(homedir(), '.cache/edge-llm/llama-server/npm');
// Run from where node-llama-cpp is installed, so the probe resolves it.
copyFileSync('scripts/gguf/gguf-greedy-probe.mjs', join(npm, 'gguf-greedy-probe.mjs'));
const reference = JSON.parse(readFileSync('test/fixtures/gguf/lowbit-logits.json', 'utf8')) as Record<string, { sequences: { ids: number[] }[] }>;

const files = process.env.FILES?.split(',') ?? Object.keys(reference).filter((key) => key.endsWith('.gguf'));
const sequencesOf = (file: string) => reference[file]?.sequences ?? reference['tiny-qwen3-q2_k.gguf'].sequences.map(({ ids }) => ({ ids: ids.map((id) => id % 500) }));
for (const file of files) {
  const model = await fixtureModel(file.replace(/\.gguf$/, ''));
  const { session } = await fusedSession(model, 'quantized');
  const vocab = model.shape.vocabSize;
  const rows: string[] = [];
  for (const { ids } of sequencesOf(file)) {
    const theirs = JSON.parse(execFileSync('node', ['gguf-greedy-probe.mjs', join(process.cwd(), 'test/fixtures/gguf', file), JSON.stringify(ids), String(STEPS)], { cwd: npm, encoding: 'utf8' }).trim().split('\n').at(-1)!) as number[];
    const ours: number[] = [];
    let step = await forward(session, model, ids);
    let gap = '';
    for (let i = 0; i < STEPS; i++) {
      const row = step.logits.subarray(step.logits.length - vocab);
      const best = row.indexOf(Math.max(...row));
      ours.push(best);
      if (gap === '' && theirs[i] !== undefined && theirs[i] !== best) gap = ` (first difference at token ${i}: our logit gap ${(row[best] - row[theirs[i]]).toFixed(3)})`;
      step = await forward(session, model, [best], step.present);
    }
    const same = ours.findIndex((id, i) => id !== theirs[i]);
    rows.push(`${same === -1 ? STEPS : same}/${STEPS}${gap}`);
  }
  console.log(`${file}: leading tokens equal ${rows.join(', ')}`);
}
