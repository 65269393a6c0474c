import { canonicalJson, isSchemaObject, jsonTypeOf, type JsonType } from './schema-keywords.js';

/**
 * Whether two oneOf branches can never both accept a value, judged under JSON Schema's own
 * rules (a branch without "type" accepts every non-matching type). The grammar generates
 * oneOf like anyOf, so it is only exact when the branches exclude each other; this check
 * proves that from distinct types, distinct enum/const values, or a required property
 * whose const/enum values differ (a discriminator). Anything else counts as overlapping.
 */
type CoarseType = Exclude<JsonType, 'integer'>;
const ALL_TYPES: ReadonlySet<CoarseType> = new Set(['null', 'boolean', 'number', 'string', 'array', 'object']);

/** Follows $ref (and single-subschema allOf) to the schema that applies. */
export type SchemaResolver = (schema: unknown) => unknown;

function coarse(type: JsonType): CoarseType {
  return type === 'integer' ? 'number' : type;
}

function typesOf(schema: unknown, resolve: SchemaResolver, depth = 0): ReadonlySet<CoarseType> {
  schema = resolve(schema);
  if (schema === false) return new Set();
  if (!isSchemaObject(schema) || depth > 32) return ALL_TYPES;
  let types: Set<CoarseType> = new Set(ALL_TYPES);
  const narrow = (allowed: Iterable<CoarseType>) => {
    const keep = new Set(allowed);
    types = new Set([...types].filter((t) => keep.has(t)));
  };
  if (typeof schema.type === 'string') narrow([coarse(schema.type as JsonType)]);
  if (Array.isArray(schema.type)) narrow((schema.type as JsonType[]).map(coarse));
  const values = valuesOf(schema, resolve);
  if (values) narrow(values.map((v) => coarse(jsonTypeOf(JSON.parse(v)))));
  for (const key of ['anyOf', 'oneOf'] as const) {
    const branches = schema[key];
    if (Array.isArray(branches)) {
      const union = new Set<CoarseType>();
      for (const branch of branches) for (const t of typesOf(branch, resolve, depth + 1)) union.add(t);
      narrow(union);
    }
  }
  return types;
}

/** The canonical JSON of the only values the schema accepts, when it lists them. */
function valuesOf(schema: unknown, resolve: SchemaResolver): string[] | null {
  schema = resolve(schema);
  if (!isSchemaObject(schema)) return null;
  let values: string[] | null = null;
  if (Array.isArray(schema.enum)) values = schema.enum.map(canonicalJson);
  if ('const' in schema) {
    const only = canonicalJson(schema.const);
    values = values === null ? [only] : values.filter((v) => v === only);
  }
  return values;
}

function onlyObjects(schema: unknown, resolve: SchemaResolver): boolean {
  const types = typesOf(schema, resolve);
  return types.size === 1 && types.has('object');
}

function disjointValues(a: string[] | null, b: string[] | null): boolean {
  return a !== null && b !== null && !a.some((v) => b.includes(v));
}

export function provablyDisjoint(a: unknown, b: unknown, resolve: SchemaResolver): boolean {
  const typesA = typesOf(a, resolve);
  const typesB = typesOf(b, resolve);
  if (![...typesA].some((t) => typesB.has(t))) return true;
  if (disjointValues(valuesOf(a, resolve), valuesOf(b, resolve))) return true;
  const ra = resolve(a);
  const rb = resolve(b);
  if (!isSchemaObject(ra) || !isSchemaObject(rb) || !onlyObjects(ra, resolve) || !onlyObjects(rb, resolve)) return false;
  const requiredA = Array.isArray(ra.required) ? (ra.required as unknown[]) : [];
  const requiredB = Array.isArray(rb.required) ? (rb.required as unknown[]) : [];
  const propsA = isSchemaObject(ra.properties) ? ra.properties : {};
  const propsB = isSchemaObject(rb.properties) ? rb.properties : {};
  return requiredA.some(
    (name) =>
      typeof name === 'string' &&
      requiredB.includes(name) &&
      Object.prototype.hasOwnProperty.call(propsA, name) &&
      Object.prototype.hasOwnProperty.call(propsB, name) &&
      disjointValues(valuesOf(propsA[name], resolve), valuesOf(propsB[name], resolve)),
  );
}
