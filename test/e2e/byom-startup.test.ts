/** `npm start` on a model folder laid out as users bring them: what it reports, what it refuses. */
import { basename } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { removeFixtureFolders, writeFixtureFolder } from '../helpers/byom-fixtures.js';
import { spawnFailingServer, spawnServer } from './spawn-server.js';

afterAll(removeFixtureFolders);

describe('npm start on a brought model', () => {
  it('reports file, size, dtype, shape, inputs, batching and load time before listening, then serves', async () => {
    const dir = await writeFixtureFolder({
      files: ['onnx/model_q4f16.onnx'],
      layout: { kvType: 'float16', logitsType: 'float16', logitsToKeep: 'num_logits_to_keep' },
      externalDataMaxFileBytes: Infinity,
    });
    const server = await spawnServer({ MODEL_DIR: dir, MODEL_DTYPE: 'q4f16' });
    try {
      const output = server.output();
      const before = output.slice(0, output.indexOf('Listening on'));
      expect(before).toMatch(/Model file: onnx\/model_q4f16\.onnx, \d+\.\d KiB, dtype q4f16\n/);
      expect(before).toMatch(/Model: 2 layers, 2 key\/value heads of 8, context 96 tokens\n/);
      expect(before).toContain(
        'Model inputs: input_ids, attention_mask, position_ids, num_logits_to_keep, past_key_values.0..1 (ids int64, KV float16, logits float16, position_ids, num_logits_to_keep)',
      );
      expect(before).toContain('Batching: across requests, left-padded rows (self-test passed)');
      expect(before).toMatch(/Model loaded and warmed up in \d+ ms/);
      const response = await fetch(`${server.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: basename(dir), messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4, temperature: 0 }),
      });
      const text = await response.clone().text();
      expect(response.status, text).toBe(200);
      const body = await response.json();
      expect(body.usage.completion_tokens).toBeGreaterThan(0);
      // The ChatML prompt: 2 × <|im_start|>, 1 × <|im_end|>, "user\nHi", "\n", "assistant\n".
      expect(body.usage.prompt_tokens).toBeGreaterThan(5);
    } finally {
      expect(await server.stop('SIGTERM')).toBe(0);
    }
  });

  it('warns at startup when a graph cannot batch requests of different lengths', async () => {
    const dir = await writeFixtureFolder({ layout: { positions: 'from-past-length' } });
    const server = await spawnServer({ MODEL_DIR: dir });
    try {
      expect(server.output()).toContain('Batching: one request per step (batched rows of different lengths gave logits different');
      expect(server.output()).toContain('Warning: cross-request batching is off for this graph');
    } finally {
      await server.stop('SIGTERM');
    }
  });

  it('exits with 1 and lists the variants when several are present and no dtype is set', async () => {
    const dir = await writeFixtureFolder({ files: ['onnx/model_q4.onnx', 'onnx/model_int8.onnx'] });
    const { code, output } = await spawnFailingServer({ MODEL_DIR: dir });
    expect(code).toBe(1);
    expect(output).toContain('holds several model variants and no fp32 one: q4 (onnx/model_q4.onnx), int8 (onnx/model_int8.onnx)');
    expect(output).not.toMatch(/\n\s+at /);
  });
});
