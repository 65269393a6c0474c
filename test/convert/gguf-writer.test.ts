/**
 * The GGUF writer, read back by a small independent GGUF v3 reader: header, metadata, tensor
 * table, 32-byte alignment, and the stories260K checkpoint's tensors as llama.cpp names
 * them (the bench checks that llama.cpp's server loads such a file and decodes as we do).
 */
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { encodeGguf, GgmlType } from '../../scripts/convert/gguf-writer.js';
import { buildLlamaGguf } from '../../scripts/convert/llama-gguf.js';
import { packQ4_0, quantizeQ4Rows } from '../../src/graph/q4-blocks.js';
import { loadSharedCheckpoint, sharedModelFile } from './model-paths.js';

interface ReadTensor { name: string; dims: number[]; type: number; data: Uint8Array }

function readGguf(chunks: Uint8Array[]) {
  const bytes = Buffer.concat(chunks);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 0;
  const u32 = () => ((at += 4), view.getUint32(at - 4, true));
  const u64 = () => ((at += 8), Number(view.getBigUint64(at - 8, true)));
  const str = () => {
    const n = u64();
    at += n;
    return bytes.subarray(at - n, at).toString('utf8');
  };
  const scalar = (type: number): unknown => {
    switch (type) {
      case 4: return u32();
      case 5: return ((at += 4), view.getInt32(at - 4, true));
      case 6: return ((at += 4), view.getFloat32(at - 4, true));
      case 7: return ((at += 1), bytes[at - 1] === 1);
      case 8: return str();
      case 9: {
        const inner = u32();
        return Array.from({ length: u64() }, () => scalar(inner));
      }
      default: throw new Error(`type ${type}`);
    }
  };
  const magic = bytes.subarray(0, 4).toString('latin1');
  at = 4;
  const version = u32();
  const tensorCount = u64();
  const kvCount = u64();
  const metadata = new Map<string, unknown>();
  for (let i = 0; i < kvCount; i++) {
    const key = str();
    metadata.set(key, scalar(u32()));
  }
  const infos = Array.from({ length: tensorCount }, () => {
    const name = str();
    const dims = Array.from({ length: u32() }, () => u64());
    return { name, dims, type: u32(), offset: u64() };
  });
  const dataStart = Math.ceil(at / 32) * 32;
  const sizeOf = (type: number, dims: number[]) => {
    const n = dims.reduce((a, b) => a * b, 1);
    return type === 0 ? n * 4 : type === 1 ? n * 2 : (n / 32) * 18;
  };
  const tensors: ReadTensor[] = infos.map((info) => ({
    ...info,
    data: bytes.subarray(dataStart + info.offset, dataStart + info.offset + sizeOf(info.type, info.dims)),
  }));
  return { magic, version, metadata, tensors, offsets: infos.map((i) => i.offset), size: bytes.byteLength };
}

describe('GGUF writer', () => {
  it('writes a v3 file whose metadata and tensors read back, data aligned to 32 bytes', () => {
    const q4 = packQ4_0(quantizeQ4Rows(Float32Array.from({ length: 64 }, (_, i) => i - 32), 2, 32));
    const file = readGguf(
      encodeGguf({
        metadata: [
          ['general.architecture', { type: 'string', value: 'llama' }],
          ['llama.block_count', { type: 'uint32', value: 3 }],
          ['eps', { type: 'float32', value: 0.5 }],
          ['flag', { type: 'bool', value: true }],
          ['tokens', { type: 'strings', value: ['<unk>', '▁a'] }],
          ['types', { type: 'int32s', value: [2, -1] }],
        ],
        tensors: [
          { name: 'a', dims: [3], type: GgmlType.F32, data: new Uint8Array(Float32Array.of(1, 2, 3).buffer) },
          { name: 'b', dims: [32, 2], type: GgmlType.Q4_0, data: q4 },
        ],
      }),
    );
    expect(file.magic).toBe('GGUF');
    expect(file.version).toBe(3);
    expect(Object.fromEntries(file.metadata)).toEqual({
      'general.architecture': 'llama',
      'llama.block_count': 3,
      eps: 0.5,
      flag: true,
      tokens: ['<unk>', '▁a'],
      types: [2, -1],
    });
    expect(file.offsets).toEqual([0, 32]);
    expect([...new Float32Array(new Uint8Array(file.tensors[0].data).buffer)]).toEqual([1, 2, 3]);
    expect(file.tensors[1]).toMatchObject({ name: 'b', dims: [32, 2], type: 2 });
    expect(Buffer.from(file.tensors[1].data)).toEqual(Buffer.from(q4));
  });

  it('refuses tensor data of the wrong size', () => {
    expect(() =>
      encodeGguf({ metadata: [], tensors: [{ name: 'x', dims: [4], type: GgmlType.F32, data: new Uint8Array(12) }] }),
    ).toThrow(/12 bytes, expected 16/);
  });
});

describe('stories260K as a llama GGUF', () => {
  it('has llama.cpp tensor names, the checkpoint shapes and the tokenizer pieces', async () => {
    const ckpt = await loadSharedCheckpoint();
    const tokenizer = await readFile(sharedModelFile('tok512.bin'));
    for (const weights of ['F32', 'Q4_0'] as const) {
      const file = readGguf(encodeGguf(buildLlamaGguf(ckpt, tokenizer, { weights })));
      const byName = new Map(file.tensors.map((t) => [t.name, t]));
      expect(file.tensors).toHaveLength(2 + 9 * 5); // tied output: no output.weight
      expect(byName.get('blk.0.attn_k.weight')!.dims).toEqual([64, 32]);
      expect(byName.get('blk.4.ffn_down.weight')).toMatchObject({ dims: [172, 64], type: 0 }); // rows of 172: no Q4_0 blocks
      expect(byName.get('blk.4.ffn_up.weight')).toMatchObject({ dims: [64, 172], type: weights === 'F32' ? 0 : 2 });
      expect(byName.get('token_embd.weight')!.type).toBe(weights === 'F32' ? 0 : 2);
      if (weights === 'F32') {
        const wq = new Float32Array(new Uint8Array(byName.get('blk.2.attn_q.weight')!.data).buffer);
        expect(wq).toEqual(ckpt.layers[2].wq); // llama2.c's layout: no rotate-half permutation
      }
      expect(file.metadata.get('general.file_type')).toBe(weights === 'F32' ? 0 : 2);
      expect(file.metadata.get('llama.rope.freq_base')).toBe(10000);
      expect(file.metadata.get('llama.attention.head_count_kv')).toBe(4);
      const tokens = file.metadata.get('tokenizer.ggml.tokens') as string[];
      expect(tokens.slice(0, 4)).toEqual(['<unk>', '<s>', '</s>', '<0x00>']);
      expect(tokens[259]).toBe('▁t');
      expect((file.metadata.get('tokenizer.ggml.token_type') as number[]).slice(0, 4)).toEqual([2, 3, 3, 6]);
    }
  });
});
