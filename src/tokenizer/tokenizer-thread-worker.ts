/**
 * The tokenizer thread (node-tokenizer-thread.ts starts it): builds its copy of the
 * server's tokenizer from the same files once, then tokenizes one text per message, in
 * the same slices as on the main thread, stopping once past stopAfter. The ids go back as
 * a moved Uint32Array. Bundled beside the server as tokenizer-thread-worker.js.
 */
import { deserialize } from 'node:v8';
import { parentPort } from 'node:worker_threads';
import { HfTokenizer } from './hf-tokenizer.js';
import type { HfTokenizerSource, TokenizerThreadJob } from './tokenizer-thread.js';

export type TokenizerThreadMessage = { kind: 'load'; files: Uint8Array } | ({ kind: 'encode'; id: number } & TokenizerThreadJob);
export type TokenizerThreadReply = { id: number; ids: Uint32Array } | { id: number; error: string };

let tokenizer: HfTokenizer | null = null;

function encode(job: TokenizerThreadJob): Uint32Array {
  if (tokenizer === null) throw new Error('the tokenizer thread has no tokenizer');
  const ids: number[] = [];
  for (const slice of tokenizer.encodeInSlices(job.text, { addSpecialTokens: job.addSpecialTokens })) {
    for (const id of slice) ids.push(id);
    if (job.stopAfter !== undefined && ids.length > job.stopAfter) break;
  }
  return Uint32Array.from(ids);
}

parentPort?.on('message', (message: TokenizerThreadMessage) => {
  if (message.kind === 'load') {
    // v8.serialize'd HfTokenizerSource, in memory shared with the main thread (node-tokenizer-thread.ts).
    const source = deserialize(Buffer.from(message.files.buffer, message.files.byteOffset, message.files.byteLength)) as HfTokenizerSource;
    const { tokenizerJson, tokenizerConfig, options } = source;
    tokenizer = HfTokenizer.fromJson(tokenizerJson, tokenizerConfig, options);
    return;
  }
  try {
    const ids = encode(message);
    parentPort!.postMessage({ id: message.id, ids } satisfies TokenizerThreadReply, [ids.buffer as ArrayBuffer]);
  } catch (error) {
    parentPort!.postMessage({ id: message.id, error: error instanceof Error ? error.message : String(error) } satisfies TokenizerThreadReply);
  }
});
