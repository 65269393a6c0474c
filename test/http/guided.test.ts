import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseServerConfig } from '../../src/config/server-config.js';
import type { Engine } from '../../src/engine/types.js';
import { createApp } from '../../src/http/app.js';
import { MODEL, MODEL_DIR, expectError, loadEngine, postJson, ssePayloads, testApp } from './helpers.js';

let engine: Engine;
beforeAll(async () => {
  engine = await loadEngine();
});
afterAll(() => engine.dispose());

const PROMPT = 'Once upon a time';
const completion = { model: MODEL, prompt: PROMPT, max_tokens: 200, temperature: 1 };
const chat = { model: MODEL, messages: [{ role: 'user', content: PROMPT }], max_tokens: 200, temperature: 1 };
const SEEDS = [1, 2, 3, 4, 5, 6];

/** vLLM 0.6's wording (protocol.py, check_guided_decoding_count). */
const VLLM_ONE_KIND = "You can only use one kind of guided decoding ('guided_json', 'guided_regex' or 'guided_choice').";

const PERSON = {
  type: 'object',
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 12 },
    age: { type: 'integer', minimum: 1, maximum: 99 },
    mood: { enum: ['happy', 'sad'] },
    friends: { type: 'array', items: { type: 'string', maxLength: 6 }, maxItems: 3 },
  },
  required: ['name', 'age', 'mood'],
  additionalProperties: false,
};
const validatePerson = new Ajv2020({ strict: true }).compile(PERSON);

interface Output {
  text: string;
  finishReason: string | null;
  stopReason: unknown;
}

async function complete(body: object, path: '/v1/completions' | '/v1/chat/completions' = '/v1/completions'): Promise<Output> {
  const response = await postJson(testApp(engine), path, body);
  expect(response.status, await response.clone().text()).toBe(200);
  const choice = (await response.json()).choices[0];
  const text = path === '/v1/completions' ? choice.text : choice.message.content;
  return { text, finishReason: choice.finish_reason, stopReason: choice.stop_reason };
}

/** The streamed text and the last chunk's finish_reason, checking the stream ends with [DONE]. */
async function stream(body: object, path: '/v1/completions' | '/v1/chat/completions'): Promise<Output> {
  const response = await postJson(testApp(engine), path, { ...body, stream: true });
  expect(response.status).toBe(200);
  const payloads = ssePayloads(await response.text());
  expect(payloads.at(-1)).toBe('[DONE]');
  const chunks = payloads.slice(0, -1).map((p) => JSON.parse(p));
  const choices = chunks.map((chunk) => chunk.choices[0]);
  const text = choices.map((c) => (path === '/v1/completions' ? c.text : (c.delta.content ?? ''))).join('');
  return { text, finishReason: choices.at(-1).finish_reason, stopReason: choices.at(-1).stop_reason };
}

/**
 * Text that completes a cut-off compact JSON text into a whole one (JSON.parse is the
 * judge: if text + completion parses, text was a valid start). Tracks open containers,
 * strings and whether a string is a key; fills what is missing with the shortest value.
 */
function closeJsonPrefix(text: string): string {
  const open: string[] = [];
  let inString = false;
  let escape = 0; // 1 after a backslash, 2..5 inside \uXXXX
  let stringIsKey = false;
  let last = ''; // last character outside strings
  for (const ch of text) {
    if (inString) {
      if (escape === 1) escape = ch === 'u' ? 2 : 0;
      else if (escape > 1) escape = escape === 5 ? 0 : escape + 1;
      else if (ch === '\\') escape = 1;
      else if (ch === '"') {
        inString = false;
        last = stringIsKey ? 'key' : 'value';
      }
      continue;
    }
    if (ch === '"') {
      inString = true;
      stringIsKey = open.at(-1) === '{' && (last === '{' || last === ',');
    } else if (ch === '{' || ch === '[') open.push(ch);
    else if (ch === '}' || ch === ']') open.pop();
    last = ch === '"' ? last : ch;
  }
  let out = '';
  if (inString) {
    if (escape === 1) out += 'n';
    else if (escape > 1) out += '0'.repeat(6 - escape);
    out += '"';
    last = stringIsKey ? 'key' : 'value';
  }
  const literal = /(t|tr|tru|f|fa|fal|fals|n|nu|nul)$/.exec(text);
  if (!inString && literal) out += ['true', 'false', 'null'].find((w) => w.startsWith(literal[1]))!.slice(literal[1].length);
  else if (last === 'key') out += ':0';
  else if (last === ':' || (!inString && /(-|\d\.|\d[eE][-+]?)$/.test(text))) out += '0';
  else if (last === ',') out += open.at(-1) === '{' ? '"k":0' : '0';
  for (const container of open.reverse()) out += container === '{' ? '}' : ']';
  return out;
}

function expectValidPerson({ text, finishReason }: Output): void {
  expect(finishReason, text).toBe('stop');
  const value = JSON.parse(text);
  expect(validatePerson(value), `${text} ${JSON.stringify(validatePerson.errors)}`).toBe(true);
}

describe('structured output with speculative decoding (on for guided requests by default)', () => {
  // Objects whose keys repeat: guesses hold, so a step often yields several tokens.
  const PEOPLE = {
    type: 'array',
    minItems: 3,
    maxItems: 3,
    items: { type: 'object', properties: { name: { type: 'string', maxLength: 8 }, age: { type: 'integer', minimum: 1, maximum: 9 } }, required: ['name', 'age'], additionalProperties: false },
  };

  it('streams the same text and logprobs as the whole response, several tokens per chunk where guesses held', async () => {
    const body = { model: MODEL, prompt: PROMPT, max_tokens: 150, temperature: 0, guided_json: PEOPLE, logprobs: 1 };
    const whole = await (await postJson(testApp(engine), '/v1/completions', body)).json();
    const response = await postJson(testApp(engine), '/v1/completions', { ...body, stream: true });
    const choices = ssePayloads(await response.text())
      .slice(0, -1)
      .map((payload) => JSON.parse(payload).choices[0]);
    expect(choices.map((c) => c.text).join('')).toBe(whole.choices[0].text);
    expect(() => JSON.parse(whole.choices[0].text)).not.toThrow();
    const tokens = choices.flatMap((c) => c.logprobs.tokens);
    expect(tokens).toEqual(whole.choices[0].logprobs.tokens);
    expect(tokens).toHaveLength(whole.usage.completion_tokens);
    expect(choices.some((c) => c.logprobs.tokens.length > 1)).toBe(true);
  });
});

describe('guided_json', () => {
  it('/v1/completions: every output parses and validates against the schema', async () => {
    const outputs = await Promise.all(SEEDS.map((seed) => complete({ ...completion, seed, guided_json: PERSON })));
    outputs.forEach(expectValidPerson);
    // The constraint shapes the output, it does not fix it: seeds still matter.
    expect(new Set(outputs.map((o) => o.text)).size).toBeGreaterThan(1);
  });

  it('/v1/completions streaming: the chunks add up to a valid document', async () => {
    for (const seed of SEEDS.slice(0, 3)) expectValidPerson(await stream({ ...completion, seed, guided_json: PERSON }, '/v1/completions'));
  });

  it('/v1/chat/completions: the message content validates, streamed or not', async () => {
    for (const seed of SEEDS.slice(0, 3)) {
      const whole = await complete({ ...chat, seed, guided_json: PERSON }, '/v1/chat/completions');
      expectValidPerson(whole);
      const streamed = await stream({ ...chat, seed, guided_json: PERSON }, '/v1/chat/completions');
      expect(streamed.text).toBe(whole.text);
    }
  });

  it('accepts the schema as JSON text, with the same result as the object', async () => {
    const asObject = await complete({ ...completion, seed: 11, guided_json: PERSON });
    const asText = await complete({ ...completion, seed: 11, guided_json: JSON.stringify(PERSON) });
    expectValidPerson(asText);
    expect(asText.text).toBe(asObject.text);
  });

  it('reads integers beyond 2^53 in a schema as JSON.parse does', async () => {
    // The body parser keeps such integers exact (as bigint); the schema must still compile.
    const schema = '{"type": "integer", "minimum": 5, "maximum": 100000000000000000000}';
    const body = (guided_json: string) => `{"model": "${MODEL}", "prompt": "${PROMPT}", "max_tokens": 30, "seed": 3, "guided_json": ${guided_json}}`;
    const response = await postJson(testApp(engine), '/v1/completions', body(schema));
    expect(response.status).toBe(200);
    const { text, finish_reason } = (await response.json()).choices[0];
    expect(finish_reason).toBe('stop');
    expect(Number.isInteger(JSON.parse(text)) && JSON.parse(text) >= 5).toBe(true);
    const asText = await (await postJson(testApp(engine), '/v1/completions', body(JSON.stringify(schema)))).json();
    expect(asText.choices[0].text).toBe(text);
  });

  it('gives the same text for the same seed, and follows the schema under greedy decoding', async () => {
    const [a, b] = await Promise.all([7, 7].map((seed) => complete({ ...completion, seed, guided_json: PERSON })));
    expect(a.text).toBe(b.text);
    expectValidPerson(await complete({ ...completion, temperature: 0, guided_json: PERSON }));
  });

  it('ends with "length" and a prefix of a valid document when max_tokens is too small', async () => {
    // With an enum of objects every valid document is known in advance (compact JSON).
    const values = [{ name: 'Lily', age: 5, mood: 'happy' }, { name: 'Tom', age: 7, mood: 'sad' }];
    const documents = values.map((v) => JSON.stringify(v));
    for (const seed of SEEDS.slice(0, 3)) {
      const { text, finishReason } = await complete({ ...completion, seed, max_tokens: 4, guided_json: { enum: values } });
      expect(finishReason).toBe('length');
      expect(text.length).toBeGreaterThan(0);
      expect(documents.some((d) => d.startsWith(text) && d !== text), text).toBe(true);
    }
    const whole = await complete({ ...completion, seed: 1, guided_json: { enum: values } });
    expect(whole.finishReason).toBe('stop');
    expect(documents).toContain(whole.text);
  });

  it('lets stop strings end the output early, as without a schema', async () => {
    const { text, finishReason, stopReason } = await complete({ ...completion, seed: 2, guided_json: PERSON, stop: [',"age"'] });
    expect(finishReason).toBe('stop');
    expect(stopReason).toBe(',"age"');
    expect(text).toMatch(/^\{"name":"[^"]*"$/);
  });
});

describe('response_format', () => {
  it('json_schema (vLLM reads json_schema.schema) on both endpoints', async () => {
    const response_format = { type: 'json_schema', json_schema: { name: 'person', schema: PERSON, strict: true } };
    for (const seed of SEEDS.slice(0, 3)) {
      expectValidPerson(await complete({ ...chat, seed, response_format }, '/v1/chat/completions'));
      expectValidPerson(await complete({ ...completion, seed, response_format }));
    }
  });

  it('json_object gives a JSON object, or the start of one when max_tokens cuts it', async () => {
    // A story model rarely closes an open-ended object (it writes prose into the strings),
    // so outputs are checked as prefixes: completed by closeJsonPrefix, they must parse.
    const outputs = await Promise.all(
      SEEDS.map((seed) => complete({ ...chat, seed, max_tokens: 40, response_format: { type: 'json_object' } }, '/v1/chat/completions')),
    );
    for (const { text, finishReason } of outputs) {
      const value = JSON.parse(finishReason === 'stop' ? text : text + closeJsonPrefix(text));
      expect(value !== null && typeof value === 'object' && !Array.isArray(value), text).toBe(true);
    }
    // The story model's own first tokens are prose: only the grammar makes them "{".
    expect(outputs.every((o) => o.text.startsWith('{"'))).toBe(true);
  });

  it('"text" leaves the output unconstrained', async () => {
    const plain = await complete({ ...completion, seed: 5, max_tokens: 20 });
    const text = await complete({ ...completion, seed: 5, max_tokens: 20, response_format: { type: 'text' } });
    expect(text.text).toBe(plain.text);
  });
});

describe('guided_choice and guided_regex', () => {
  it('guided_choice returns exactly one of the choices', async () => {
    const choices = ['Lily', 'Tom', 'the big dog', 'a red ball'];
    const outputs = await Promise.all(SEEDS.map((seed) => complete({ ...completion, seed, guided_choice: choices })));
    for (const { text, finishReason } of outputs) {
      expect(finishReason).toBe('stop');
      expect(choices).toContain(text);
    }
  });

  it('guided_choice in a streamed chat', async () => {
    const choices = ['yes', 'no', 'maybe'];
    const { text, finishReason } = await stream({ ...chat, seed: 4, guided_choice: choices }, '/v1/chat/completions');
    expect(finishReason).toBe('stop');
    expect(choices).toContain(text);
  });

  it('guided_regex output matches the whole pattern', async () => {
    const pattern = '(Lily|Tom) (is|was) [a-z]{2,8}( and [a-z]{2,8})?\\.';
    const outputs = await Promise.all(SEEDS.map((seed) => complete({ ...completion, seed, guided_regex: pattern })));
    for (const { text, finishReason } of outputs) {
      expect(finishReason).toBe('stop');
      expect(text).toMatch(new RegExp(`^(?:${pattern})$`));
    }
  });

  it('a stop string cuts a choice like any output, and include_stop_str_in_output keeps it', async () => {
    const choices = ['the dog ran', 'the cat sat'];
    expect(await complete({ ...completion, seed: 1, guided_choice: choices, stop: [' '] })).toEqual({
      text: 'the',
      finishReason: 'stop',
      stopReason: ' ',
    });
    const kept = await complete({ ...completion, seed: 1, guided_choice: choices, stop: [' '], include_stop_str_in_output: true });
    expect(kept.text).toBe('the ');
  });
});

describe('POST /generate (extension: the OpenAI endpoints\' guided fields)', () => {
  const generate = { prompt: PROMPT, max_tokens: 200, temperature: 1 };

  it('guided_choice: the generated text after the prompt is one of the choices', async () => {
    const choices = ['yes', 'no'];
    const response = await postJson(testApp(engine), '/generate', { ...generate, seed: 3, guided_choice: choices });
    expect(response.status).toBe(200);
    const { text } = await response.json();
    expect(text[0].startsWith(PROMPT)).toBe(true);
    expect(choices).toContain(text[0].slice(PROMPT.length));
  });

  it('guided_json, streamed: the events add up to a valid document', async () => {
    const response = await postJson(testApp(engine), '/generate', { ...generate, seed: 3, stream: true, guided_json: PERSON });
    expect(response.status).toBe(200);
    const text = ssePayloads(await response.text())
      .map((p) => JSON.parse(p).text[0])
      .join('');
    expectValidPerson({ text, finishReason: 'stop', stopReason: null });
  });

  it('refuses two kinds at once and unsupported schema keywords', async () => {
    const app = testApp(engine);
    const message = await expectError(postJson(app, '/generate', { ...generate, guided_json: {}, guided_regex: 'a' }), 400, 'BadRequestError', 'guided_regex');
    expect(message).toBe(VLLM_ONE_KIND);
    const keyword = await expectError(postJson(app, '/generate', { ...generate, guided_json: { type: 'string', format: 'email' } }), 400, 'BadRequestError', 'guided_json');
    expect(keyword).toMatch(/'format'/);
  });
});

describe('refused requests → 400 naming the field', () => {
  it.each([
    ['guided_json + guided_regex', { guided_json: PERSON, guided_regex: 'a+' }, ['guided_regex']],
    ['guided_regex + guided_choice', { guided_regex: 'a+', guided_choice: ['a'] }, ['guided_choice']],
    ['guided_json + response_format', { guided_json: PERSON, response_format: { type: 'json_object' } }, ['guided_json', 'response_format']],
    ['guided_choice + response_format', { guided_choice: ['a'], response_format: { type: 'json_schema', json_schema: { name: 'x', schema: {} } } }, ['guided_choice', 'response_format']],
  ])('two kinds at once (%s): vLLM\'s message', async (_name, extra, params) => {
    for (const [path, body] of [['/v1/completions', completion], ['/v1/chat/completions', chat]] as const) {
      const response = await postJson(testApp(engine), path, { ...body, ...extra });
      expect(response.status).toBe(400);
      const error = await response.json();
      expect(error.message).toBe(VLLM_ONE_KIND);
      expect(params).toContain(error.param);
    }
  });

  it.each([
    ['format', { type: 'string', format: 'email' }],
    ['uniqueItems', { type: 'array', uniqueItems: true }],
    ['patternProperties', { type: 'object', patternProperties: { '^a': { type: 'string' } } }],
    ['multipleOf', { type: 'integer', multipleOf: 3 }],
  ])('an unsupported JSON Schema keyword (%s) is named, not ignored', async (keyword, schema) => {
    const app = testApp(engine);
    const viaGuidedJson = await expectError(postJson(app, '/v1/completions', { ...completion, guided_json: schema }), 400, 'BadRequestError', 'guided_json');
    expect(viaGuidedJson).toContain(`'${keyword}'`);
    const response_format = { type: 'json_schema', json_schema: { name: 'x', schema } };
    const viaResponseFormat = await expectError(postJson(app, '/v1/chat/completions', { ...chat, response_format }), 400, 'BadRequestError', 'response_format');
    expect(viaResponseFormat).toContain(`'${keyword}'`);
  });

  it('a schema that is not JSON, an invalid regex, malformed fields', async () => {
    const app = testApp(engine);
    expect(await expectError(postJson(app, '/v1/completions', { ...completion, guided_json: '{"type": ' }), 400, 'BadRequestError', 'guided_json')).toMatch(/not valid JSON/);
    expect(await expectError(postJson(app, '/v1/completions', { ...completion, guided_regex: '(a' }), 400, 'BadRequestError', 'guided_regex')).toMatch(/regular expression/);
    await expectError(postJson(app, '/v1/completions', { ...completion, guided_choice: 'a' }), 400, 'BadRequestError', 'guided_choice');
    await expectError(postJson(app, '/v1/chat/completions', { ...chat, response_format: { type: 'json_schema' } }), 400, 'BadRequestError', 'response_format.json_schema');
    await expectError(postJson(app, '/v1/chat/completions', { ...chat, response_format: { type: 'xml' } }), 400, 'BadRequestError', 'response_format.type');
  });

  it('an app built without a guide compiler (a runtime without XGrammar) refuses guided requests by field', async () => {
    const app = createApp({ engine, config: parseServerConfig({ modelDir: MODEL_DIR, servedModelName: MODEL }) });
    const message = await expectError(postJson(app, '/v1/chat/completions', { ...chat, response_format: { type: 'json_object' } }), 400, 'BadRequestError', 'response_format');
    expect(message).toMatch(/not available/);
    await expectError(postJson(app, '/v1/completions', { ...completion, guided_choice: ['a'] }), 400, 'BadRequestError', 'guided_choice');
    expect((await postJson(app, '/v1/completions', { ...completion, max_tokens: 3, response_format: { type: 'text' } })).status).toBe(200);
  });

  it('guided_grammar is refused by name', async () => {
    const message = await expectError(postJson(testApp(engine), '/v1/completions', { ...completion, guided_grammar: 'root ::= "a"' }), 400, 'BadRequestError', 'guided_grammar');
    expect(message).toMatch(/not supported/);
  });

  it('guided_whitespace_pattern is refused with a JSON kind (output is compact) and unused otherwise', async () => {
    const app = testApp(engine);
    for (const extra of [{ guided_json: PERSON }, { response_format: { type: 'json_object' } }]) {
      const message = await expectError(
        postJson(app, '/v1/chat/completions', { ...chat, ...extra, guided_whitespace_pattern: '[ ]?' }),
        400,
        'BadRequestError',
        'guided_whitespace_pattern',
      );
      expect(message).toMatch(/compact/);
    }
    const { text } = await complete({ ...completion, seed: 1, guided_regex: '[a-z]{3}', guided_whitespace_pattern: '[ ]?' });
    expect(text).toMatch(/^[a-z]{3}$/);
  });
});
