import { Ajv2020 } from 'ajv/dist/2020.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { ProtocolError } from '../../src/common/protocol-error.js';
import { accepts, compile, compileSchema, GUIDE_HOMES, useGuideHome } from './byte-tokenizer.js';

// Every suite twice: XGrammar on this thread (workerd, the page) and on Node's guide threads.
describe.each(GUIDE_HOMES)('XGrammar %s', (home) => {
beforeAll(() => useGuideHome(home));

const ajv = new Ajv2020({ strict: false });

/**
 * Every candidate text must be accepted by the guide exactly when `expected` says so; and
 * whatever the guide accepts must parse and validate under ajv (the independent oracle).
 */
async function check(schema: object, cases: Record<string, boolean>) {
  const factory = await compileSchema(schema);
  const validate = ajv.compile(schema);
  for (const [text, expected] of Object.entries(cases)) {
    const accepted = accepts(factory, text);
    expect(accepted, `${text} for ${JSON.stringify(schema)}`).toBe(expected);
    if (accepted) expect(validate(JSON.parse(text)), `ajv on ${text}`).toBe(true);
  }
}

describe('guided_json grammar', () => {
  it('bounds integers exactly, including exclusive and negative bounds', async () => {
    for (const [schema, lo, hi] of [
      [{ type: 'integer', minimum: 3, maximum: 120 }, 3, 120],
      [{ type: 'integer', minimum: -15, maximum: 7 }, -15, 7],
      [{ type: 'integer', exclusiveMinimum: -1, exclusiveMaximum: 1 }, 0, 0],
      [{ type: 'integer', minimum: 95, maximum: 1005 }, 95, 1005],
      [{ type: 'integer', minimum: 2.5, maximum: 9.5 }, 3, 9],
      [{ type: 'integer', minimum: -120, maximum: -100 }, -120, -100],
    ] as const) {
      const factory = await compileSchema(schema);
      for (let n = lo - 40; n <= hi + 40; n++) {
        expect(accepts(factory, String(n)), `${n} in ${JSON.stringify(schema)}`).toBe(n >= lo && n <= hi);
      }
      expect(accepts(factory, `0${lo}`)).toBe(false); // no leading zeros
    }
  });

  it("reads draft-4's boolean exclusiveMinimum/exclusiveMaximum", async () => {
    const factory = await compileSchema({ type: 'integer', minimum: 1, exclusiveMinimum: true, maximum: 4, exclusiveMaximum: true });
    for (let n = -2; n <= 7; n++) expect(accepts(factory, String(n)), String(n)).toBe(n > 1 && n < 4);
  });

  it('keeps unbounded integers within 15 digits so JavaScript reads them exactly', async () => {
    await check({ type: 'integer' }, { '0': true, '-7': true, '999999999999999': true, '1000000000000000': false, '1.5': false, '01': false });
  });

  it('bounds numbers with integer bounds, never letting a rounded value cross a bound', async () => {
    await check(
      { type: 'number', minimum: 0, exclusiveMaximum: 5 },
      { '0': true, '0.0': true, '4.999999': true, '5': false, '5.0': false, '4.9999999': false, '-0.5': false, '2.25': true, '1e1': false },
    );
    await check(
      { type: 'number', exclusiveMinimum: -2, maximum: 3 },
      { '-2': false, '-2.000': false, '-1.999999': true, '-2.000001': false, '3': true, '3.000': true, '3.000001': false, '0': true, '-0': true },
    );
    await check({ type: 'number' }, { '-12.5e-3': true, '1E+99': true, '1e100': false, '.5': false, '1.': false, '-': false });
  });

  it('writes strings as valid JSON: escapes for quotes, backslashes and controls, lengths in characters', async () => {
    await check(
      { type: 'string', minLength: 2, maxLength: 3 },
      {
        '"ab"': true,
        '"abc"': true,
        '"a"': false,
        '"abcd"': false,
        '"a\\"b"': true,
        '"\\\\n"': true,
        '"\\u00e9!"': true,
        '"é😀"': true,
        '"a\tb"': false, // a raw tab is not JSON
        '"a\\ud83d"': false, // half a surrogate pair would count as one character fewer
        '"a\\x"': false,
      },
    );
  });

  it('constrains strings with a pattern, escaping what JSON must escape', async () => {
    await check(
      { type: 'string', pattern: '^[a-z"\\\\]{1,4}$' },
      { '"ab"': true, '"a\\"b"': true, '"a\\\\"': true, '"a"b"': false, '"abcde"': false, '"AB"': false, '""': false },
    );
    await check({ type: 'string', pattern: '^\\d{3}$', minLength: 3, maxLength: 3 }, { '"123"': true, '"12"': false });
  });

  it('generates declared properties in order, required ones always, optional ones when chosen', async () => {
    await check(
      {
        type: 'object',
        properties: { a: { type: 'integer' }, b: { type: 'string', maxLength: 2 }, c: { type: 'boolean' } },
        required: ['b'],
      },
      {
        '{"b":"x"}': true,
        '{"a":1,"b":"x"}': true,
        '{"a":1,"b":"x","c":true}': true,
        '{"b":"","c":false}': true,
        '{}': false,
        '{"a":1}': false,
        '{"b":"x","a":1}': false,
        '{"b":"x","d":1}': false,
        '{"b": "x"}': false, // compact: no whitespace
      },
    );
  });

  it('allows additional properties only when asked, never repeating a declared key', async () => {
    await check(
      { type: 'object', properties: { id: { type: 'integer' } }, required: ['id'], additionalProperties: { type: 'boolean' } },
      {
        '{"id":1}': true,
        '{"id":1,"ok":true}': true,
        '{"id":1,"i":true,"idx":false}': true,
        '{"id":1,"id":true}': false,
        '{"id":1,"ok":3}': false,
        '{"id":1,"\\u0069d":true}': false,
      },
    );
    await check({ type: 'object' }, { '{}': true, '{"x":[1,{"y":null}],"z":"w"}': true, '[]': false });
  });

  it('bounds arrays and types their items', async () => {
    await check(
      { type: 'array', items: { enum: ['x', 1, null] }, minItems: 1, maxItems: 3 },
      { '["x"]': true, '[1,null,"x"]': true, '[]': false, '[1,1,1,1]': false, '["y"]': false },
    );
    await check({ type: 'array', maxItems: 0 }, { '[]': true, '[1]': false });
  });

  it('supports enum, const, type lists, anyOf, exclusive oneOf and local $ref (recursive too)', async () => {
    await check({ enum: ['red', 42, { k: [1] }, null] }, { '"red"': true, '42': true, '{"k":[1]}': true, 'null': true, '"blue"': false });
    await check({ type: 'string', enum: ['a', 1] }, { '"a"': true, '1': false });
    await check({ const: 'he said "hi"' }, { '"he said \\"hi\\""': true, '"he said hi"': false });
    await check({ type: ['integer', 'null'] }, { '3': true, 'null': true, '"3"': false });
    await check({ anyOf: [{ type: 'integer' }, { type: 'number' }] }, { '1': true, '1.5': true });
    await check(
      { oneOf: [{ type: 'object', properties: { kind: { const: 'a' } }, required: ['kind'] }, { type: 'object', properties: { kind: { const: 'b' }, n: { type: 'integer' } }, required: ['kind'] }] },
      { '{"kind":"a"}': true, '{"kind":"b","n":2}': true, '{"kind":"c"}': false },
    );
    await check(
      {
        $defs: { node: { type: 'object', properties: { v: { type: 'integer' }, next: { anyOf: [{ $ref: '#/$defs/node' }, { type: 'null' }] } }, required: ['v', 'next'] } },
        $ref: '#/$defs/node',
      },
      { '{"v":1,"next":null}': true, '{"v":1,"next":{"v":2,"next":null}}': true, '{"v":1}': false },
    );
    await check({ type: 'array', items: { $ref: '#' }, maxItems: 2 }, { '[]': true, '[[],[[]]]': true, '[1]': false });
  });

  it.each([
    [{ type: 'string', format: 'email' }, "'format'"],
    [{ type: 'array', uniqueItems: true }, "'uniqueItems'"],
    [{ type: 'integer', multipleOf: 3 }, "'multipleOf'"],
    [{ type: 'object', patternProperties: { '^x': {} } }, "'patternProperties'"],
    [{ not: { type: 'string' } }, "'not'"],
    [{ if: { type: 'string' }, then: { minLength: 1 } }, "'if'"],
    [{ type: 'object', minProperties: 1 }, "'minProperties'"],
    [{ type: 'array', prefixItems: [{ type: 'string' }] }, "'prefixItems'"],
    [{ type: 'array', items: [{ type: 'string' }] }, 'tuple'],
    [{ type: 'object', properties: { x: { type: 'string', contentEncoding: 'base64' } } }, "'contentEncoding' is not supported (at #/properties/x)"],
    [{ $ref: 'https://example.com/schema.json' }, 'only local references'],
    [{ $ref: '#/$defs/missing' }, 'does not point to anything'],
    [{ allOf: [{ type: 'string' }, { maxLength: 3 }] }, "'allOf'"],
    [{ type: 'object', anyOf: [{ required: ['a'] }] }, "'anyOf' together with 'type'"],
    [{ oneOf: [{ type: 'integer' }, { type: 'number' }] }, "'oneOf' is only supported when its subschemas exclude each other"],
    [{ type: 'number', minimum: 0.5 }, 'bounds of a number must be integers'],
    [{ type: 'string', pattern: '(a)\\1' }, 'backreferences'],
    [{ type: 'string', pattern: '^a+$', maxLength: 3 }, "'pattern'"],
    [{ anyOf: [{ $ref: '#' }, { type: 'null' }] }, 'left recursion'],
    [{ type: 'integer', minimum: 5, maximum: 4 }, 'no integer'],
    [{ type: 'object', required: ['a'], additionalProperties: false }, "required property 'a'"],
    [{ type: 'strin' }, 'unknown type'],
    [{ type: 'string', maxLength: 5000 }, "'maxLength'"],
    [{ type: 'array', minItems: 5000 }, "'minItems'"],
  ])('refuses %j naming the problem', async (schema, named) => {
    const error = await compileSchema(schema).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProtocolError);
    expect((error as ProtocolError).kind).toBe('invalid_request');
    expect((error as ProtocolError).param).toBe('guided_json');
    expect((error as ProtocolError).message).toContain(named);
  });

  it('refuses a schema given as text that is not JSON, naming the field it came from', async () => {
    const error = await compile({ kind: 'json', schema: '{"type":', param: 'response_format' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProtocolError);
    expect((error as ProtocolError).param).toBe('response_format');
    expect((error as ProtocolError).message).toMatch(/not valid JSON/);
  });

  it('accepts a schema given as JSON text like the same object', async () => {
    const factory = await compile({ kind: 'json', schema: '{"type":"boolean"}' });
    expect(accepts(factory, 'true')).toBe(true);
    expect(accepts(factory, '1')).toBe(false);
  });

  it('json_object mode accepts any JSON object and nothing else', async () => {
    const factory = await compile({ kind: 'json_object' });
    for (const text of ['{}', '{"a":[1,2.5,"x",null,true,{"b":{}}]}']) expect(accepts(factory, text), text).toBe(true);
    for (const text of ['[]', '"x"', '{"a":}', '{a:1}', '{"a":1,}']) expect(accepts(factory, text), text).toBe(false);
  });
});
});
