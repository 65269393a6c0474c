// llama.cpp's greedy continuation (libllama via node-llama-cpp, CPU, f32 KV, no flash attention) of
// token ids: node gguf-greedy-probe.mjs file.gguf "[ids]" count (run from where node-llama-cpp is installed).
import { getLlama } from 'node-llama-cpp';
const [path, idsJson, countText] = process.argv.slice(2);
const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' });
const model = await llama.loadModel({ modelPath: path });
const context = await model.createContext({ contextSize: 256, batchSize: 64, threads: 1, experimentalKvCacheKeyType: 'F32', experimentalKvCacheValueType: 'F32', flashAttention: false });
const seq = context.getSequence();
const out = [];
for await (const token of seq.evaluate(JSON.parse(idsJson), { temperature: 0 })) {
  out.push(token);
  if (out.length >= Number(countText)) break;
}
console.log(JSON.stringify(out));
process.exit(0);
