/** Repos for the test Hub (hub-server.ts), made of the repository's own files. */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../docs/doc-blocks.js';
import type { HubRepo } from './hub-server.js';

function folderFiles(dir: string, prefix = ''): Record<string, Uint8Array> {
  const out: Record<string, Uint8Array> = {};
  for (const name of readdirSync(join(dir, prefix))) {
    const path = prefix ? `${prefix}/${name}` : name;
    if (statSync(join(dir, path)).isDirectory()) Object.assign(out, folderFiles(dir, path));
    else out[path] = new Uint8Array(readFileSync(join(dir, path)));
  }
  return out;
}

/** Bytes no loader can read: a file that must never be fetched would fail the load if it were. */
const junk = (size: number) => new Uint8Array(size).fill(7);

/** An onnx-community-style repo: the embedded model's folder plus other dtypes' graphs that a --dtype fp32 start must not fetch. */
export const ONNX_REPO: HubRepo = {
  files: {
    ...folderFiles(join(REPO_ROOT, 'models/stories260k')),
    'onnx/model_q4.onnx': junk(200_000),
    'onnx/model_fp16.onnx': junk(150_000),
    'onnx/model_fp16.onnx_data': junk(300_000),
  },
};

/** A GGUF repo with several quantizations, as bartowski / TheBloke publish them. */
export const GGUF_REPO: HubRepo = {
  files: {
    'README.md': new TextEncoder().encode('# tiny llama\n'),
    'tiny-llama-Q4_K_M.gguf': new Uint8Array(readFileSync(join(REPO_ROOT, 'test/fixtures/gguf/tiny-llama-kquants.gguf'))),
    'tiny-llama-Q8_0.gguf': junk(400_000),
    'tiny-llama-Q4_K.gguf': junk(100_000),
  },
};

export const GATED_REPO: HubRepo = { files: { 'config.json': new TextEncoder().encode('{}') }, token: 'hf_good_token' };
