/**
 * How far our greedy text follows llama-server's on the same GGUF: for each prompt, the
 * tokens generated before the first difference (llama.cpp rounds activations to 8 bits in
 * its quantized dot products, so near ties can go the other way), and how many sequences
 * are identical. Figures for the README; the tests assert the rule, not these counts.
 *
 *   npx tsx scripts/gguf/measure-agreement.ts <model.gguf> [tokens=32] [--f32-kv] [--no-flash-attention]
 *
 * (llama-server's CPU flash attention rounds through F16; --no-flash-attention turns it off.)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { spawnServer } from '../../test/e2e/spawn-server.js';
import { startLlamaServer } from '../../test/worker/llama-server.js';

const PROMPTS = [
  'Once upon a time', 'The little dog', 'Lily and Tom went to the park. They', 'One day, a big', 'She was very happy because',
  'The sun was', 'Ben had a red ball.', 'In the garden,', 'Mom said,', 'The cat and the bird', 'It was a cold day', 'Tim liked to',
  'There was a tree', 'The boy saw', 'After lunch, they', 'A girl named Sue',
];

async function main(): Promise<void> {
  const [file, tokensArg] = process.argv.slice(2).filter((a) => !a.startsWith('--'));
  const maxTokens = Number(tokensArg ?? 32);
  const cache = mkdtempSync(join(tmpdir(), 'gguf-agreement-'));
  const model = basename(file);
  const ours = await spawnServer({ MODEL_DIR: file, GGUF_CACHE_DIR: cache });
  const llama = await startLlamaServer({ model: file, alias: model, args: ['-c', '4096', ...(process.argv.includes('--f32-kv') ? ['-ctk', 'f32', '-ctv', 'f32'] : []), ...(process.argv.includes('--no-flash-attention') ? ['-fa', 'off'] : [])] });
  if ('error' in llama) throw new Error(llama.error);
  const ids = async (url: string, text: string) =>
    ((await (await fetch(`${url}/tokenize`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model, prompt: text, content: text, add_special: false }) })).json()) as { tokens: number[] }).tokens;
  try {
    let identical = 0;
    let agreed = 0;
    for (const prompt of PROMPTS) {
      const body = JSON.stringify({ model, prompt, max_tokens: maxTokens, temperature: 0 });
      const text = async (url: string) => ((await (await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })).json()) as { choices: Array<{ text: string }> }).choices[0].text;
      const [mine, theirs] = await Promise.all([text(ours.url), text(llama.url)]);
      const [a, b] = await Promise.all([ids(ours.url, mine), ids(ours.url, theirs)]);
      let same = 0;
      while (same < Math.min(a.length, b.length) && a[same] === b[same]) same++;
      if (mine === theirs) identical++;
      agreed += mine === theirs ? maxTokens : same;
      console.log(`${mine === theirs ? 'same' : `first ${same} tokens`}\t${JSON.stringify(prompt)}`);
    }
    console.log(`${model}: ${identical}/${PROMPTS.length} sequences identical, ${agreed}/${PROMPTS.length * maxTokens} leading tokens agree`);
  } finally {
    await Promise.all([ours.stop(), llama.stop()]);
    rmSync(cache, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
