import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalEngine } from '../../src/engine/local-engine.js';
import { compileGuide } from '../../src/guided/compile-guide.js';
import type { GuidedDecodingRequest } from '../../src/guided/request.js';
import { createNodeEngine } from '../../src/runtime/node/engine.js';
import { defaultSamplingParams, type SamplingParams } from '../../src/sampling/params.js';
import { MODEL_DIR } from '../helpers/model.js';
import { SCHEMAS } from './schemas.js';

const SEEDS = 20;
let engine: LocalEngine;
let prompt: number[];

beforeAll(async () => {
  engine = await createNodeEngine({ modelDir: MODEL_DIR });
  prompt = engine.tokenizer.encode('Once upon a time');
});
afterAll(async () => {
  await engine.dispose();
});

async function generate(request: GuidedDecodingRequest, params: Partial<SamplingParams>) {
  const guide = await compileGuide(request, engine.tokenizer);
  let text = '';
  let finishReason: string | null = null;
  const tokenIds: number[] = [];
  for await (const delta of engine.generate({ promptTokenIds: prompt, params: defaultSamplingParams({ temperature: 1, maxTokens: 256, ...params, guide }) })) {
    text += delta.text;
    tokenIds.push(...delta.tokenIds);
    finishReason = delta.finishReason;
  }
  return { text, finishReason, tokenIds };
}

function seeds<T>(run: (seed: bigint) => Promise<T>): Promise<T[]> {
  return Promise.all(Array.from({ length: SEEDS }, (_, i) => run(BigInt(1000 + i))));
}

describe('structured output on the embedded story model (temperature 1.0)', () => {
  it(`every finished output of ${Object.keys(SCHEMAS).length} schemas × ${SEEDS} seeds parses and validates`, async () => {
    const ajv = new Ajv2020({ strict: true, allowUnionTypes: true });
    // All schemas and seeds at once: sequences with different grammars share decode batches.
    const results = await Promise.all(
      Object.entries(SCHEMAS).map(async ([name, schema]) => ({
        name,
        validate: ajv.compile(schema),
        outputs: await seeds((seed) => generate({ kind: 'json', schema }, { seed })),
      })),
    );
    for (const { name, validate, outputs } of results) {
      const finished = outputs.filter((o) => o.finishReason === 'stop');
      // The suite only means something if outputs actually finish (they do, deterministically).
      expect(finished.length, name).toBeGreaterThanOrEqual(SEEDS * 0.75);
      for (const { text } of finished) {
        expect(() => JSON.parse(text), `${name}: ${text}`).not.toThrow();
        expect(validate(JSON.parse(text)), `${name}: ${text} ${JSON.stringify(validate.errors)}`).toBe(true);
      }
      // Seeds matter: the outputs are not all the same.
      expect(new Set(finished.map((o) => o.text)).size, name).toBeGreaterThan(1);
    }
  });

  it('guided_choice returns one of the choices', async () => {
    const choices = ['Lily', 'Tom', 'the dog', 'a big red ball'];
    const outputs = await seeds((seed) => generate({ kind: 'choice', choices }, { seed }));
    for (const { text, finishReason } of outputs) {
      expect(finishReason).toBe('stop');
      expect(choices).toContain(text);
    }
  });

  it('guided_regex output matches the regex in full', async () => {
    const pattern = '(Lily|Tom) (is|was) [a-z]{2,8}( and [a-z]{2,8})?\\.';
    const outputs = await seeds((seed) => generate({ kind: 'regex', pattern }, { seed }));
    for (const { text, finishReason } of outputs) {
      expect(finishReason).toBe('stop');
      expect(text).toMatch(new RegExp(`^(?:${pattern})$`));
    }
  });

  it('json_object mode gives JSON objects', async () => {
    const outputs = await seeds((seed) => generate({ kind: 'json_object' }, { seed, maxTokens: 64 }));
    for (const { text, finishReason } of outputs) {
      if (finishReason === 'stop') expect(JSON.parse(text)).toBeTypeOf('object');
      else expect(text.startsWith('{')).toBe(true);
    }
  });

  it("ends with 'length' and a valid prefix when max_tokens cuts the output", async () => {
    const choices = ['Once upon a time there was a little girl named Lily', 'One day a big dog ran into the park'];
    const outputs = await seeds((seed) => generate({ kind: 'choice', choices }, { seed, maxTokens: 4 }));
    for (const { text, finishReason, tokenIds } of outputs) {
      expect(finishReason).toBe('length');
      expect(tokenIds).toHaveLength(4);
      expect(choices.some((c) => c.startsWith(text) && text.length > 0)).toBe(true);
    }
  });

  it('ends when the grammar is complete even if EOS is ignored or min_tokens asks for more', async () => {
    const ignoring = await generate({ kind: 'choice', choices: ['yes', 'no'] }, { seed: 7n, ignoreEos: true });
    expect(ignoring.finishReason).toBe('stop');
    expect(['yes', 'no']).toContain(ignoring.text);
    const early = await generate({ kind: 'choice', choices: ['no'] }, { seed: 7n, minTokens: 10 });
    expect(early.finishReason).toBe('stop');
    expect(early.text).toBe('no');
  });

  it('gives the same output for the same seed, guided or batched with others', async () => {
    const request: GuidedDecodingRequest = { kind: 'json', schema: SCHEMAS['object with required string and bounded integer'] };
    const alone = await generate(request, { seed: 42n });
    const together = await Promise.all([generate(request, { seed: 42n }), generate({ kind: 'regex', pattern: '[a-z ]{1,40}' }, { seed: 1n }), generate(request, { seed: 42n })]);
    expect(together[0].text).toBe(alone.text);
    expect(together[2].text).toBe(alone.text);
  });
});
