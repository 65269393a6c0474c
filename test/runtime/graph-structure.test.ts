import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { bytesField, concat, readRecords } from '../../src/adapters/protobuf.js';
import { graphHasOp } from '../../src/engine/graph-ops.js';
import { readGraphStructure } from '../../src/runtime/node/graph-structure.js';
import { readModelDir } from '../../src/runtime/node/model-dir.js';
import { MODEL_DIR } from '../helpers/model.js';

const GRAPH_FILE = join(MODEL_DIR, 'onnx/model.onnx');

/** The expected structure, from the whole file in memory: every initializer without its data fields. */
function withoutInitializerData(model: Uint8Array): Uint8Array {
  const dataFields = new Set([4, 5, 6, 7, 9, 10, 11]);
  return concat(
    readRecords(model).map((record) => {
      if (record.field !== 7) return record.raw;
      const graph = readRecords(record.payload!).map((entry) => {
        if (entry.field !== 5) return entry.raw;
        const tensor = readRecords(entry.payload!).filter((field) => !dataFields.has(field.field));
        return bytesField(5, concat(tensor.map((field) => field.raw)));
      });
      return bytesField(7, concat(graph));
    }),
  );
}

describe('readGraphStructure', () => {
  it('is the graph with every initializer kept but its weights left out', async () => {
    const full = new Uint8Array(await readFile(GRAPH_FILE));
    const { structure, fileBytes } = await readGraphStructure(GRAPH_FILE);
    expect(fileBytes).toBe(full.byteLength);
    expect(Buffer.from(structure).equals(Buffer.from(withoutInitializerData(full)))).toBe(true);
    // The embedded model's weights are inline: the structure is a small part of the file.
    expect(structure.byteLength).toBeLessThan(full.byteLength / 10);
    for (const op of ['MatMul', 'Gather', 'Softmax']) expect(graphHasOp(structure, op)).toBe(graphHasOp(full, op));
    expect(graphHasOp(structure, 'DynamicQuantizeLinear')).toBe(false);
  });

  it('refuses a file that is not a serialized model', async () => {
    await expect(readGraphStructure(join(MODEL_DIR, 'config.json'))).rejects.toThrow();
  });
});

describe('readModelDir with graphStructureOnly (onnxruntime-node opens the graph by path)', () => {
  it('holds the structure in JS and reports the weights the file carries', async () => {
    const files = await readModelDir(MODEL_DIR, { modelFile: 'onnx/model.onnx', graphStructureOnly: true });
    const { size } = await stat(GRAPH_FILE);
    expect(files.weightBytes).toBe(size);
    expect(files.onnx.byteLength).toBeLessThan(size / 10);
    expect(files.onnxPath).toBe(GRAPH_FILE);
  });
});
