import { afterAll, describe, expect, it } from 'vitest';
import { createNodeEngine } from '../../src/runtime/node/engine.js';
import type { LocalEngine } from '../../src/engine/local-engine.js';
import { MODEL_DIR } from '../helpers/model.js';

// `npm start` asks for the tokenizer thread (runtime/node/main.ts); other Node engines (tests,
// benches) and the homes without threads keep none, and then hold no copy of tokenizer.json.
const engines: LocalEngine[] = [];
afterAll(async () => {
  for (const engine of engines) {
    await engine.tokenizer.offLoop?.close();
    await engine.dispose();
  }
});

describe("Node's engine and the tokenizer thread", () => {
  it('gives the tokenizer a thread that returns its own ids when asked, and none otherwise', async () => {
    const threaded = await createNodeEngine({ modelDir: MODEL_DIR, tokenizerThread: true });
    const plain = await createNodeEngine({ modelDir: MODEL_DIR });
    engines.push(threaded, plain);
    const text = 'x'.repeat(2000);
    expect(await threaded.tokenizer.offLoop!.encode({ text, addSpecialTokens: true })).toEqual(threaded.tokenizer.encode(text));
    expect(plain.tokenizer.offLoop ?? null).toBeNull();
  });
});
