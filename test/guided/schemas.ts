/**
 * The schemas of the end-to-end structured-output suite: together they use the supported
 * features (additional properties with free-form keys are covered by
 * json-schema-guide.test.ts instead: a story model keeps writing prose into the key).
 * Strings are mostly length-bounded so a story model finishes them.
 */
export const SCHEMAS: Record<string, object> = {
  'object with required string and bounded integer': {
    type: 'object',
    properties: { name: { type: 'string', maxLength: 12 }, age: { type: 'integer', minimum: 0, maximum: 120 } },
    required: ['name', 'age'],
  },
  'optional properties, boolean, nullable via anyOf': {
    type: 'object',
    properties: {
      flag: { type: 'boolean' },
      note: { anyOf: [{ type: 'string', maxLength: 8 }, { type: 'null' }] },
      count: { type: 'integer', minimum: -5, maximum: 5 },
    },
    required: ['flag'],
  },
  'array with minItems/maxItems of bounded integers': {
    type: 'array',
    items: { type: 'integer', minimum: -50, maximum: 50 },
    minItems: 1,
    maxItems: 5,
  },
  'enum and const': {
    type: 'object',
    properties: { color: { enum: ['red', 'green', 'blue'] }, version: { const: 2 }, unit: { type: 'string', enum: ['cm', 'in'] } },
    required: ['color', 'version', 'unit'],
    additionalProperties: false,
  },
  'nested objects and arrays': {
    type: 'object',
    properties: {
      user: {
        type: 'object',
        properties: {
          id: { type: 'integer', minimum: 1, maximum: 9999 },
          tags: { type: 'array', items: { enum: ['a', 'b', 'c'] }, maxItems: 3 },
        },
        required: ['id', 'tags'],
      },
      active: { type: 'boolean' },
    },
    required: ['user', 'active'],
  },
  'bounded numbers, inclusive and exclusive': {
    type: 'object',
    properties: {
      score: { type: 'number', minimum: 0, maximum: 10 },
      ratio: { type: 'number', exclusiveMinimum: 0, exclusiveMaximum: 1 },
      delta: { type: 'number', minimum: -3, exclusiveMaximum: 3 },
    },
    required: ['score', 'ratio', 'delta'],
  },
  'string patterns': {
    type: 'object',
    properties: { code: { type: 'string', pattern: '^[A-Z]{2}-\\d{3}$' }, zip: { type: 'string', pattern: '^\\d{5}(-\\d{4})?$' } },
    required: ['code', 'zip'],
  },
  'recursive $ref through $defs': {
    $defs: {
      tree: {
        type: 'object',
        properties: { value: { type: 'integer', minimum: 0, maximum: 9 }, children: { type: 'array', items: { $ref: '#/$defs/tree' }, maxItems: 2 } },
        required: ['value', 'children'],
      },
    },
    $ref: '#/$defs/tree',
  },
  'oneOf with a const discriminator': {
    oneOf: [
      { type: 'object', properties: { kind: { const: 'circle' }, r: { type: 'integer', minimum: 1, maximum: 100 } }, required: ['kind', 'r'] },
      { type: 'object', properties: { kind: { const: 'square' }, side: { type: 'integer', minimum: 1, maximum: 100 } }, required: ['kind', 'side'] },
    ],
  },
  'allOf with one subschema, definitions and exclusive integer bounds': {
    definitions: {
      point: {
        type: 'object',
        properties: { x: { type: 'integer', minimum: -9, exclusiveMaximum: 9 }, y: { type: 'integer', minimum: -9, maximum: 9 } },
        required: ['x', 'y'],
        additionalProperties: false,
      },
    },
    type: 'array',
    items: { allOf: [{ $ref: '#/definitions/point' }], description: 'a point' },
    minItems: 2,
    maxItems: 2,
  },
  'type lists with minLength and maxLength': {
    type: 'array',
    items: { type: ['string', 'null'], minLength: 2, maxLength: 6 },
    maxItems: 4,
  },
  'strings with escapes and both length bounds': {
    type: 'object',
    properties: { text: { type: 'string', minLength: 3, maxLength: 20 }, words: { type: 'array', items: { type: 'string', maxLength: 5 }, maxItems: 3 } },
    required: ['text', 'words'],
  },
};
