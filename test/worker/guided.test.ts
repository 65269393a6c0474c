/**
 * Structured output in workerd: the Worker entry (src/runtime/worker/main.ts) runs XGrammar
 * from the precompiled dist/xgrammar.wasm, and must produce what the Node server
 * (global-setup.ts, `npm start`'s app with XGrammar under Node) produces for the same
 * seeded request: same model, same sampler, same grammar, so the same tokens.
 */
import { describe, expect, inject, it } from 'vitest';
import worker from '../../src/runtime/worker/main.js';
import { postJson, workerEnv } from './helpers.js';

const defaultEnv = workerEnv();

const PET = {
  type: 'object',
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 10 },
    legs: { type: 'integer', minimum: 0, maximum: 8 },
    kind: { enum: ['cat', 'dog', 'bird'] },
  },
  required: ['name', 'legs', 'kind'],
  additionalProperties: false,
};

/** PET's constraints, checked by hand (schema validators compile code, which workerd forbids). */
function expectPet(text: string): void {
  const pet = JSON.parse(text) as Record<string, unknown>;
  expect(Object.keys(pet).sort()).toEqual(['kind', 'legs', 'name']);
  expect(typeof pet.name).toBe('string');
  expect((pet.name as string).length).toBeGreaterThanOrEqual(1);
  expect((pet.name as string).length).toBeLessThanOrEqual(10);
  expect(Number.isInteger(pet.legs)).toBe(true);
  expect(pet.legs as number).toBeGreaterThanOrEqual(0);
  expect(pet.legs as number).toBeLessThanOrEqual(8);
  expect(['cat', 'dog', 'bird']).toContain(pet.kind);
}

interface Choice {
  text: string;
  finish_reason: string;
}

async function nodeCompletion(body: object): Promise<Choice> {
  const response = await fetch(`${inject('nodeServerUrl')}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(response.status, await response.clone().text()).toBe(200);
  return ((await response.json()) as { choices: Choice[] }).choices[0];
}

async function workerCompletion(body: object): Promise<Choice> {
  const response = await postJson(worker, defaultEnv, '/v1/completions', body);
  expect(response.status, await response.clone().text()).toBe(200);
  return ((await response.json()) as { choices: Choice[] }).choices[0];
}

describe('structured output in workerd', () => {
  it('guided_json gives schema-valid JSON, the same text as Node for the same seed', async () => {
    const texts = new Set<string>();
    for (const seed of [7, 8, 9]) {
      const request = { model: 'stories260k', prompt: 'Once upon a time', max_tokens: 120, temperature: 1, seed, guided_json: PET };
      const [fromNode, fromWorker] = [await nodeCompletion(request), await workerCompletion(request)];
      expect(fromNode.finish_reason).toBe('stop');
      expectPet(fromNode.text);
      expect(fromWorker).toMatchObject({ text: fromNode.text, finish_reason: 'stop' });
      texts.add(fromWorker.text);
    }
    // Temperature 1: the seed matters, so equal texts are not one fixed greedy answer.
    expect(texts.size).toBeGreaterThan(1);
  });

  it('guided_choice and guided_regex work too', async () => {
    const choices = ['red', 'green', 'blue'];
    const base = { model: 'stories260k', prompt: 'The ball was', max_tokens: 20, temperature: 1, seed: 3 };
    const choice = await workerCompletion({ ...base, guided_choice: choices });
    expect(choices).toContain(choice.text);
    expect(choice.text).toBe((await nodeCompletion({ ...base, guided_choice: choices })).text);
    const regex = await workerCompletion({ ...base, guided_regex: '[a-z]{3,6} [0-9]{2}' });
    expect(regex.text).toMatch(/^[a-z]{3,6} [0-9]{2}$/);
  });
});
