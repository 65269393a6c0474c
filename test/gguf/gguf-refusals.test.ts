/**
 * A GGUF the engine cannot serve exactly is refused before any weight is read, with the
 * reason: truncated or corrupt files, an architecture or tensor type it does not run.
 * The files are the committed fixtures with bytes changed (the GGUF layout is read with
 * an independent walk of the header, here, to find where to change them).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readGguf, type ByteSource } from '../../src/gguf/gguf-file.js';
import { openGgufModel } from '../../src/gguf/gguf-model.js';
import { llamaShapeOf, SUPPORTED_ARCHITECTURES } from '../../src/gguf/llama-checkpoint.js';
import { spawnFailingServer } from '../e2e/spawn-server.js';

const FIXTURE = readFileSync(new URL('../fixtures/gguf/tiny-llama-legacy.gguf', import.meta.url));

function source(bytes: Uint8Array): ByteSource {
  return { size: bytes.byteLength, read: async (offset, length) => bytes.slice(offset, offset + length) };
}

/** A copy of the fixture with the string value of `key` replaced by one of the same length. */
function withStringValue(key: string, value: string): Buffer {
  const copy = Buffer.from(FIXTURE);
  const keyAt = copy.indexOf(Buffer.from(key));
  // key, u32 type (8 = string), u64 length, bytes.
  const valueAt = keyAt + key.length + 4 + 8;
  const length = Number(copy.readBigUInt64LE(keyAt + key.length + 4));
  expect(value.length).toBe(length);
  copy.write(value, valueAt, 'latin1');
  return copy;
}

const refusal = async (bytes: Uint8Array) => {
  try {
    await openGgufModel(source(bytes));
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('the file was accepted');
};

describe('GGUF refusals', () => {
  it('reads the fixture whole (the baseline the refusals change)', async () => {
    const model = await openGgufModel(source(FIXTURE));
    expect(model.shape.architecture).toBe('llama');
    expect([...model.shape.tensorTypes.keys()].sort()).toEqual(['BF16', 'F16', 'F32', 'Q4_0', 'Q4_1', 'Q5_0', 'Q5_1', 'Q8_0']);
  });

  it('refuses a file that is not GGUF', async () => {
    expect(await refusal(new TextEncoder().encode('{"not": "a model file at all, just some JSON text"}'))).toMatch(/not a GGUF file/);
  });

  it('refuses a file truncated inside its tensor data, naming the tensor', async () => {
    expect(await refusal(FIXTURE.subarray(0, FIXTURE.byteLength - 1000))).toMatch(/tensor blk\.1\.ffn_\w+\.weight's data runs past the end of the file .*truncated/);
  });

  it('refuses a file truncated inside its header', async () => {
    expect(await refusal(FIXTURE.subarray(0, 5000))).toMatch(/the file ends inside .* truncated/);
  });

  it('refuses a corrupt header (an impossible count)', async () => {
    const copy = Buffer.from(FIXTURE);
    copy.writeBigUInt64LE(0xffffffffffn, 8);
    expect(await refusal(copy)).toMatch(/implausible counts/);
  });

  it('refuses an unknown architecture by name, with the supported list', async () => {
    expect(await refusal(withStringValue('general.architecture', 'mamba'))).toBe(`architecture "mamba" is not supported (supported: ${SUPPORTED_ARCHITECTURES.join(', ')})`);
    expect(SUPPORTED_ARCHITECTURES).toEqual(expect.arrayContaining(['llama', 'qwen2', 'qwen3', 'phi3', 'gemma2']));
  });

  it('a mixture-of-experts file without its experts, its shared expert or a count names what is missing', async () => {
    const moe = await readGguf(source(readFileSync(new URL('../fixtures/gguf/tiny-qwen3moe.gguf', import.meta.url))));
    moe.tensors = moe.tensors.filter((t) => t.name !== 'blk.1.ffn_down_exps.weight');
    expect(() => llamaShapeOf(moe)).toThrow('tensor blk.1.ffn_down_exps.weight is missing');
    moe.metadata.delete('qwen3moe.expert_used_count');
    expect(() => llamaShapeOf(moe)).toThrow('the file has no qwen3moe.expert_used_count');
    const shared = await readGguf(source(readFileSync(new URL('../fixtures/gguf/tiny-qwen2moe.gguf', import.meta.url))));
    expect(llamaShapeOf(shared).architecture).toBe('qwen2moe');
    shared.tensors = shared.tensors.filter((t) => t.name !== 'blk.0.ffn_gate_inp_shexp.weight');
    expect(() => llamaShapeOf(shared)).toThrow('tensor blk.0.ffn_gate_inp_shexp.weight is missing');
  });

  it('refuses a tensor type it cannot execute, naming the tensor and the supported types', async () => {
    const file = await readGguf(source(FIXTURE));
    const tensor = file.tensors.find((t) => t.type?.name === 'Q4_0')!;
    const copy = Buffer.from(FIXTURE);
    // The tensor table entry: name, u32 n_dims, u64 dims, u32 type, u64 offset.
    const nameAt = copy.indexOf(Buffer.from(tensor.name), 24);
    const typeAt = nameAt + tensor.name.length + 4 + 8 * tensor.dims.length;
    expect(copy.readUInt32LE(typeAt)).toBe(2);
    copy.writeUInt32LE(39, typeAt); // MXFP4: 32-element blocks as Q4_0 (17 bytes, not 18)
    expect(await refusal(copy)).toMatch(new RegExp(`tensor ${tensor.name.replaceAll('.', '\\.')} is MXFP4, a type this engine cannot execute \\(supported: F32, F16, Q4_0, Q4_1, .*Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ2_XXS, IQ2_XS, IQ3_XXS, IQ1_S, IQ4_NL, IQ3_S, IQ2_S, IQ4_XS, IQ1_M, BF16\\)`));
    copy.writeUInt32LE(99, typeAt);
    expect(await refusal(copy)).toMatch(/unknown tensor type|type id 99/);
  });

  it('refuses an unsupported tokenizer model by name', async () => {
    expect(await refusal(withStringValue('tokenizer.ggml.model', 'bert!'))).toMatch(/tokenizer.ggml.model "bert!" is not supported \(supported: llama, gpt2\)/);
  });
});

describe('npm start on a GGUF it cannot serve', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gguf-refusal-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('exits at startup with the reason', async () => {
    const path = join(dir, 'truncated.gguf');
    writeFileSync(path, FIXTURE.subarray(0, FIXTURE.byteLength - 1000));
    const exited = await spawnFailingServer({ MODEL_DIR: path, GGUF_CACHE_DIR: dir });
    expect(exited.code).not.toBe(0);
    expect(exited.output).toMatch(/Cannot load the GGUF ".*truncated\.gguf": tensor blk\.1\.\w+\.weight's data runs past the end of the file/);
  });
});

describe('phi3 files: what the header decides', () => {
  const phi3 = async (changes: Record<string, string | number>) => {
    const file = await readGguf(source(readFileSync(new URL('../fixtures/gguf/tiny-phi3.gguf', import.meta.url))));
    for (const [key, value] of Object.entries(changes)) file.metadata.set(key, value);
    return file;
  };

  it('serves within the sliding window, and picks LongRoPE factors by that context (llama.cpp: per context)', async () => {
    const shape = llamaShapeOf(await phi3({}));
    expect({ context: shape.contextLength, scaling: shape.ropeScaling, factor: shape.ropeAttentionFactor }).toEqual({
      context: 1024,
      scaling: { kind: 'longrope', factors: 'long', originalContext: 64 },
      factor: expect.closeTo(Math.SQRT2, 6),
    });
    // No window (Phi-4 writes 0): the file's whole context.
    expect(llamaShapeOf(await phi3({ 'phi3.attention.sliding_window': 0 })).contextLength).toBe(4096);
    // A served context within the original one: the short factors, for every position.
    const short = llamaShapeOf(await phi3({ 'phi3.rope.scaling.original_context_length': 1024 }));
    expect(short.ropeScaling).toEqual({ kind: 'longrope', factors: 'short', originalContext: 1024 });
  });

  it('without LongRoPE factors (Phi-3-mini-4k): plain rope, no attention factor', async () => {
    const file = await phi3({});
    file.tensors = file.tensors.filter((tensor) => !tensor.name.startsWith('rope_factors_'));
    file.metadata.delete('phi3.rope.scaling.attn_factor');
    const shape = llamaShapeOf(file);
    expect({ scaling: shape.ropeScaling, factor: shape.ropeAttentionFactor, context: shape.contextLength }).toEqual({ scaling: { kind: 'none' }, factor: 1, context: 1024 });
  });

  it('refuses partial rotary (Phi-4-mini) and YaRN by name', async () => {
    const partial = await phi3({ 'phi3.rope.dimension_count': 12 });
    expect(() => llamaShapeOf(partial)).toThrow(/^partial rotary \(rope.dimension_count 12 of head size 16\) is not supported/);
    const yarn = await phi3({ 'phi3.rope.scaling.type': 'yarn' });
    expect(() => llamaShapeOf(yarn)).toThrow(/^rope scaling "yarn" is not supported/);
  });
});
