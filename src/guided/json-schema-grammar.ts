import { alt, EbnfGrammar, literal, seq } from './ebnf.js';
import { GuidedDecodingError } from './errors.js';
import { integerRangeEbnf } from './integer-range.js';
import {
  jsonIntegerRule,
  jsonStringBody,
  jsonNumberRule,
  jsonObjectRule,
  jsonStringRule,
  jsonValueRule,
  MAX_INTEGER_DIGITS,
} from './json-grammar.js';
import { normaliseLocalRef, resolveLocalRef } from './json-pointer.js';
import { boundedNumberOptions, type NumberBounds } from './number-range.js';
import { keyNotInEbnf } from './object-keys.js';
import { provablyDisjoint } from './one-of.js';
import { DEFAULT_GUIDED_LIMITS, type GuidedLimits } from './limits.js';
import { parseRegex, regexLengthBounds } from './regex-parser.js';
import { regexToEbnf } from './regex-grammar.js';
import {
  ANNOTATION_KEYWORDS,
  canonicalJson,
  constraintKeywords,
  isSchemaObject,
  JSON_TYPES,
  type JsonType,
  SUPPORTED_KEYWORDS,
  TYPE_KEYWORDS,
  valueHasType,
} from './schema-keywords.js';

/**
 * JSON Schema → EBNF for XGrammar. Output is compact JSON (see json-grammar.ts); object
 * properties come in the order the schema lists them, declared ones before additional
 * ones. Properties the schema does not declare are only generated when
 * additionalProperties allows them explicitly, or for an object schema that declares none
 * (as XGrammar's strict mode, which vLLM uses).
 *
 * Every keyword either shapes the grammar or is refused with a GuidedDecodingError naming
 * it; see schema-keywords.ts for the lists.
 */
const INTEGER_CAP = 10 ** MAX_INTEGER_DIGITS - 1;
/** The grammar of the compact JSON texts valid under `schema`; throws GuidedDecodingError when it cannot. */
export function jsonSchemaToEbnf(schema: unknown, limits: GuidedLimits = DEFAULT_GUIDED_LIMITS): string {
  const converter = new SchemaConverter(schema, limits);
  const root = converter.convert(schema, '#');
  return converter.grammar.toString(root);
}

function fail(path: string, message: string): never {
  throw new GuidedDecodingError(`${message} (at ${path})`);
}

function unsupported(path: string, keyword: string, detail = ''): never {
  fail(path, `the JSON Schema keyword '${keyword}' is not supported${detail ? `: ${detail}` : ''}`);
}

class SchemaConverter {
  readonly grammar: EbnfGrammar;
  private readonly refRules = new Map<string, string>();
  /**
   * Refs entered since the last character the grammar consumes ("{" or "["): meeting one
   * again would be left recursion, a grammar that can loop without producing output.
   */
  private unguardedRefs = new Set<string>();

  constructor(
    private readonly root: unknown,
    private readonly limits: GuidedLimits,
  ) {
    this.grammar = new EbnfGrammar(limits.maxGrammarChars);
  }

  /** An expression matching exactly the compact JSON texts of values valid under `schema`. */
  convert(schema: unknown, path: string): string {
    const g = this.grammar;
    if (schema === true) return jsonValueRule(g);
    if (schema === false) fail(path, 'the schema false admits no value');
    if (!isSchemaObject(schema)) fail(path, 'a schema must be an object or a boolean');
    for (const key of Object.keys(schema)) {
      if (!SUPPORTED_KEYWORDS.has(key) && !ANNOTATION_KEYWORDS.has(key)) unsupported(path, key);
    }
    if ('$ref' in schema) {
      this.onlyWith(schema, '$ref', [], path);
      return this.ref(schema.$ref, path);
    }
    if ('allOf' in schema) {
      this.onlyWith(schema, 'allOf', [], path);
      const parts = this.subschemas(schema, 'allOf', path);
      if (parts.length !== 1) unsupported(path, 'allOf', 'only a single subschema is supported');
      return this.convert(parts[0], `${path}/allOf/0`);
    }
    if ('anyOf' in schema || 'oneOf' in schema) {
      const keyword = 'anyOf' in schema ? 'anyOf' : 'oneOf';
      this.onlyWith(schema, keyword, [], path);
      const branches = this.subschemas(schema, keyword, path);
      if (keyword === 'oneOf') this.checkExclusive(branches, path);
      return alt(branches.map((branch, i) => this.convert(branch, `${path}/${keyword}/${i}`)));
    }
    if ('enum' in schema || 'const' in schema) return this.enumeration(schema, path);
    const types = this.types(schema, path);
    if (types === null) return jsonValueRule(g);
    return alt(types.map((type) => this.typed(type, schema, path)));
  }

  /** Refuses keywords that would have to hold together with `keyword` (besides `allowed`). */
  private onlyWith(schema: Record<string, unknown>, keyword: string, allowed: string[], path: string): void {
    const other = constraintKeywords(schema).find((k) => k !== keyword && !allowed.includes(k));
    if (other !== undefined) fail(path, `'${keyword}' together with '${other}' in the same schema is not supported`);
  }

  private subschemas(schema: Record<string, unknown>, keyword: string, path: string): unknown[] {
    const list = schema[keyword];
    if (!Array.isArray(list) || list.length === 0) fail(path, `'${keyword}' must be a non-empty array of schemas`);
    return list;
  }

  private ref(ref: unknown, path: string): string {
    if (typeof ref !== 'string') fail(path, "'$ref' must be a string");
    const pointer = normaliseLocalRef(ref);
    if (this.unguardedRefs.has(pointer)) {
      fail(path, `'$ref': '${pointer}' refers back to itself without an object or array in between (left recursion)`);
    }
    let name = this.refRules.get(pointer);
    if (name === undefined) {
      const target = resolveLocalRef(this.root, pointer);
      // Reserved before converting, so recursive schemas refer back to this rule.
      name = this.grammar.reserve(pointer === '#' ? 'schema_root' : pointer.split('/').slice(-1)[0]);
      this.refRules.set(pointer, name);
      this.unguardedRefs.add(pointer);
      this.grammar.define(name, this.convert(target, pointer));
      this.unguardedRefs.delete(pointer);
    }
    return name;
  }

  /** Follows $ref and single-subschema allOf, for the oneOf analysis. */
  private resolve = (schema: unknown): unknown => {
    for (let hops = 0; hops < 64 && isSchemaObject(schema); hops++) {
      if (typeof schema.$ref === 'string') schema = resolveLocalRef(this.root, normaliseLocalRef(schema.$ref));
      else if (Array.isArray(schema.allOf) && schema.allOf.length === 1) schema = schema.allOf[0];
      else break;
    }
    return schema;
  };

  private checkExclusive(branches: unknown[], path: string): void {
    for (let i = 0; i < branches.length; i++) {
      for (let j = i + 1; j < branches.length; j++) {
        if (!provablyDisjoint(branches[i], branches[j], this.resolve)) {
          fail(
            path,
            `'oneOf' is only supported when its subschemas exclude each other (different types, different const/enum values, ` +
              `or a required property with different const/enum values); subschemas ${i} and ${j} may both match: use 'anyOf'`,
          );
        }
      }
    }
  }

  private enumeration(schema: Record<string, unknown>, path: string): string {
    this.onlyWith(schema, 'enum' in schema ? 'enum' : 'const', ['enum', 'const', 'type'], path);
    let values: unknown[];
    if ('enum' in schema) {
      if (!Array.isArray(schema.enum) || schema.enum.length === 0) fail(path, "'enum' must be a non-empty array");
      values = schema.enum;
    } else values = [schema.const];
    if ('const' in schema) {
      const only = canonicalJson(schema.const);
      values = values.filter((v) => canonicalJson(v) === only);
    }
    const types = 'type' in schema ? this.types(schema, path) : null;
    if (types !== null) values = values.filter((v) => types.some((t) => valueHasType(v, t)));
    if (values.length === 0) fail(path, 'no value satisfies enum/const together with type');
    return alt(values.map((v) => literal(JSON.stringify(v))));
  }

  /** The types to generate, or null for "any JSON value". */
  private types(schema: Record<string, unknown>, path: string): JsonType[] | null {
    const { type } = schema;
    if (type === undefined) {
      const implied = new Set(constraintKeywords(schema).map((k) => TYPE_KEYWORDS[k]).filter((t) => t !== undefined));
      return implied.size === 0 ? null : [...implied];
    }
    const list = Array.isArray(type) ? type : [type];
    if (list.length === 0) fail(path, "'type' must not be an empty array");
    for (const t of list) {
      if (!(JSON_TYPES as readonly unknown[]).includes(t)) fail(path, `unknown type ${JSON.stringify(t)}`);
    }
    return [...new Set(list as JsonType[])];
  }

  private typed(type: JsonType, schema: Record<string, unknown>, path: string): string {
    switch (type) {
      case 'null':
        return '"null"';
      case 'boolean':
        return '("true" | "false")';
      case 'integer':
        return this.integer(schema, path);
      case 'number':
        return this.number(schema, path);
      case 'string':
        return this.string(schema, path);
      case 'array':
        return this.array(schema, path);
      case 'object':
        return this.object(schema, path);
    }
  }

  private count(schema: Record<string, unknown>, keyword: string, path: string): number | undefined {
    const value = schema[keyword];
    if (value === undefined) return undefined;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) fail(path, `'${keyword}' must be a non-negative integer`);
    return value;
  }

  /** The grammar has a rule per counted position: refuse counts that would make it huge. */
  private checkCountBound(keyword: string, count: number, path: string): void {
    const max = this.limits.maxGuidedRepetition;
    if (count > max) unsupported(path, keyword, `values above ${max} are not supported (maxGuidedRepetition)`);
  }

  private bounds(schema: Record<string, unknown>, path: string): NumberBounds {
    const number = (keyword: string): number | undefined => {
      const value = schema[keyword];
      if (value === undefined || typeof value === 'boolean') return undefined;
      if (typeof value !== 'number' || !Number.isFinite(value)) fail(path, `'${keyword}' must be a number`);
      return value;
    };
    // The stricter of "minimum" (exclusive with draft-4's boolean exclusiveMinimum) and a
    // numeric "exclusiveMinimum"; on a tie the exclusive one.
    const pick = (inclusive: number | undefined, exclusive: number | undefined, legacy: unknown, lower: boolean) => {
      let bound: number | null = null;
      let isExclusive = false;
      if (inclusive !== undefined) [bound, isExclusive] = [inclusive, legacy === true];
      if (exclusive !== undefined && (bound === null || (lower ? exclusive >= bound : exclusive <= bound))) {
        [bound, isExclusive] = [exclusive, true];
      }
      return { bound, isExclusive };
    };
    const lo = pick(number('minimum'), number('exclusiveMinimum'), schema.exclusiveMinimum, true);
    const hi = pick(number('maximum'), number('exclusiveMaximum'), schema.exclusiveMaximum, false);
    return { min: lo.bound, exclusiveMin: lo.isExclusive, max: hi.bound, exclusiveMax: hi.isExclusive };
  }

  private integer(schema: Record<string, unknown>, path: string): string {
    const { min, max, exclusiveMin, exclusiveMax } = this.bounds(schema, path);
    if (min === null && max === null) return jsonIntegerRule(this.grammar);
    let lo = min === null ? -INTEGER_CAP : exclusiveMin ? Math.floor(min) + 1 : Math.ceil(min);
    let hi = max === null ? INTEGER_CAP : exclusiveMax ? Math.ceil(max) - 1 : Math.floor(max);
    lo = Math.max(lo, -INTEGER_CAP);
    hi = Math.min(hi, INTEGER_CAP);
    if (lo > hi) fail(path, `no integer with at most ${MAX_INTEGER_DIGITS} digits satisfies the bounds`);
    return integerRangeEbnf(lo, hi);
  }

  private number(schema: Record<string, unknown>, path: string): string {
    const bounds = this.bounds(schema, path);
    if (bounds.min === null && bounds.max === null) return jsonNumberRule(this.grammar);
    for (const bound of [bounds.min, bounds.max]) {
      if (bound !== null && !Number.isSafeInteger(bound)) {
        unsupported(path, 'minimum', `bounds of a number must be integers (got ${bound}); use type integer or integer bounds`);
      }
    }
    const options = boundedNumberOptions(bounds);
    if (options.length === 0) fail(path, 'no number with at most 9 integer digits satisfies the bounds');
    return alt(options);
  }

  private string(schema: Record<string, unknown>, path: string): string {
    const g = this.grammar;
    const minLength = this.count(schema, 'minLength', path) ?? 0;
    const maxLength = this.count(schema, 'maxLength', path) ?? Infinity;
    if (minLength > maxLength) fail(path, "'minLength' is greater than 'maxLength'");
    if (schema.pattern !== undefined) {
      if (typeof schema.pattern !== 'string') fail(path, "'pattern' must be a string");
      let node;
      try {
        node = parseRegex(schema.pattern, { maxRepetition: this.limits.maxGuidedRepetition, maxDepth: this.limits.maxGuidedNestingDepth });
      } catch (error) {
        if (error instanceof GuidedDecodingError) fail(`${path}/pattern`, `'pattern': ${error.message}`);
        throw error;
      }
      const length = regexLengthBounds(node);
      if (length.min < minLength || length.max > maxLength) {
        unsupported(path, 'pattern', "together with 'minLength'/'maxLength' only when the pattern's own lengths lie within them");
      }
      return seq('"\\""', regexToEbnf(node, 'json-string', g, '"\\""', `${hintOf(path)}_pattern`));
    }
    if (minLength === 0 && maxLength === Infinity) return jsonStringRule(g);
    this.checkCountBound(maxLength === Infinity ? 'minLength' : 'maxLength', maxLength === Infinity ? minLength : maxLength, path);
    return seq('"\\""', jsonStringBody(g, minLength, maxLength));
  }

  private array(schema: Record<string, unknown>, path: string): string {
    const minItems = this.count(schema, 'minItems', path) ?? 0;
    let maxItems = this.count(schema, 'maxItems', path) ?? Infinity;
    if (minItems > maxItems) fail(path, "'minItems' is greater than 'maxItems'");
    const { items } = schema;
    if (Array.isArray(items)) unsupported(path, 'items', 'an array of schemas (tuple validation) is not supported');
    if (items === false) maxItems = 0;
    if (minItems > maxItems) fail(path, "'items' is false but 'minItems' asks for items");
    if (maxItems === 0) return '"[" "]"';
    this.checkCountBound(maxItems === Infinity ? 'minItems' : 'maxItems', maxItems === Infinity ? minItems : maxItems, path);
    const g = this.grammar;
    const hint = hintOf(path);
    const itemExpr = this.afterOpening(() => this.convert(items ?? true, `${path}/items`));
    const item = /^[A-Za-z_][A-Za-z0-9_]*$/.test(itemExpr) ? itemExpr : g.rule(`${hint}_item`, itemExpr);
    // After the first item: more items, each after a comma, then "]" (see EbnfGrammar.loop).
    const rest = g.loop(`${hint}_items`, (next) => `"," ${item} ${next}`, Math.max(minItems - 1, 0), maxItems - 1, '"]"');
    return minItems === 0 ? `"[" ("]" | ${item} ${rest})` : `"[" ${item} ${rest}`;
  }

  /** Converts what follows a "{" or "[": references from there on are not left-recursive. */
  private afterOpening<T>(convert: () => T): T {
    const saved = this.unguardedRefs;
    this.unguardedRefs = new Set();
    try {
      return convert();
    } finally {
      this.unguardedRefs = saved;
    }
  }

  private object(schema: Record<string, unknown>, path: string): string {
    return this.afterOpening(() => this.objectAfterOpening(schema, path));
  }

  private objectAfterOpening(schema: Record<string, unknown>, path: string): string {
    const g = this.grammar;
    const properties = schema.properties ?? {};
    if (!isSchemaObject(properties)) fail(path, "'properties' must be an object");
    const required = schema.required ?? [];
    if (!Array.isArray(required) || required.some((r) => typeof r !== 'string')) fail(path, "'required' must be an array of strings");
    const requiredSet = new Set(required as string[]);

    let extra = schema.additionalProperties;
    if (extra !== undefined && typeof extra !== 'boolean' && !isSchemaObject(extra)) {
      fail(path, "'additionalProperties' must be a schema");
    }
    const unevaluated = schema.unevaluatedProperties;
    if (unevaluated !== undefined && unevaluated !== true && unevaluated !== false) {
      unsupported(path, 'unevaluatedProperties', 'only true or false is supported');
    }
    if (extra === undefined) {
      const declaresNone = Object.keys(properties).length === 0 && requiredSet.size === 0;
      extra = unevaluated === false ? false : declaresNone ? true : false;
    }

    // Declared properties in schema order, then required names the schema leaves undeclared.
    const members: Array<{ name: string; schema: unknown; required: boolean }> = [];
    for (const [name, propSchema] of Object.entries(properties)) {
      if (propSchema === false) {
        if (requiredSet.has(name)) fail(`${path}/properties/${name}`, `property '${name}' is required but its schema is false`);
        continue;
      }
      members.push({ name, schema: propSchema, required: requiredSet.has(name) });
    }
    for (const name of requiredSet) {
      if (Object.prototype.hasOwnProperty.call(properties, name)) continue;
      if (extra === false) fail(path, `required property '${name}' is not declared and additionalProperties is false`);
      members.push({ name, schema: extra, required: true });
    }

    if (members.length === 0 && extra === true && Object.keys(properties).length === 0) return jsonObjectRule(g);

    const hint = hintOf(path);
    const pairs = members.map((m) => {
      const value = this.convert(m.schema, `${path}/properties/${m.name}`);
      return g.rule(`${hint}_${m.name}`, seq(literal(JSON.stringify(m.name)), '":"', value));
    });

    let extraFirst = '""';
    let extraRest = '""';
    if (extra !== false) {
      const names = Object.keys(properties).concat([...requiredSet]);
      const key = names.length === 0 ? jsonStringRule(g) : keyNotInEbnf(g, names, hint);
      const value = this.convert(extra, `${path}/additionalProperties`);
      const pair = g.rule(`${hint}_extra`, seq(key, '":"', value));
      extraRest = `("," ${pair})*`;
      extraFirst = `(${pair} ${extraRest})?`;
    }

    // first[i]: members i.. with nothing written yet; rest[i]: after at least one member.
    let first = extraFirst;
    let rest = extraRest;
    for (let i = members.length - 1; i >= 0; i--) {
      const restNext = rest;
      const firstNext = first;
      const withMember = seq(`"," ${pairs[i]}`, restNext);
      rest = g.rule(`${hint}_rest`, members[i].required ? withMember : alt([withMember, restNext]));
      const startWithMember = seq(pairs[i], restNext);
      first = g.rule(`${hint}_first`, members[i].required ? startWithMember : alt([startWithMember, firstNext]));
    }
    return seq('"{"', first, '"}"');
  }
}

/** A readable rule-name stem from a schema path. */
function hintOf(path: string): string {
  const tail = path.split('/').filter((p) => p !== '#' && p !== 'properties').slice(-2).join('_');
  return tail === '' ? 'root_object' : tail;
}
