// llama.cpp's own tokenizer and detokenizer on a GGUF's vocabulary (libllama through
// node-llama-cpp, the npm bundle scripts/peer/build-llama-server.sh installs; vocabulary
// only, no weights): node llama-vocab-probe.mjs file.gguf '{"texts": [...], "ids": [...]}'.
// tokenize parses special tokens, as llama-server does for prompts; detokenize renders each
// id alone without and with special tokens (llama_token_to_piece's `special`).
import { getLlama } from 'node-llama-cpp';

const [path, request] = process.argv.slice(2);
const { texts, ids } = JSON.parse(request);
const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' });
const model = await llama.loadModel({ modelPath: path, vocabOnly: true });
const out = { tokenize: {}, detokenize: {}, detokenize_special: {} };
for (const text of texts) out.tokenize[text] = [...model.tokenize(text, true)];
for (const id of ids) {
  out.detokenize[id] = model.detokenize([id], false);
  out.detokenize_special[id] = model.detokenize([id], true);
}
console.log(JSON.stringify(out));
process.exit(0);
