/**
 * Building blocks for request schemas whose error messages state the rule in plain words
 * ("must be a number in (0.0, 2.0]"), shared by the MindIE and OpenAI schemas.
 */
import { z } from 'zod';
import { codePoints } from '../tokenizer/token-lower-bound.js';

export const INT32_MIN = -2147483648;
export const INT32_MAX = 2147483647;
export const INT64_MIN = -(2n ** 63n);
export const INT64_MAX = 2n ** 63n - 1n;
export const UINT64_MAX = 2n ** 64n - 1n;

export interface NumberRange {
  min?: number;
  /** The minimum itself is not allowed: (min, ... */
  minExclusive?: boolean;
  max?: number;
  maxExclusive?: boolean;
}

/** Python-style float text, as the specs write their ranges: 1.0, 2.0, 1e-06. */
export function formatFloat(value: number): string {
  if (Number.isInteger(value) && Math.abs(value) < 1e16) return value.toFixed(1);
  const abs = Math.abs(value);
  if (abs !== 0 && (abs < 1e-4 || abs >= 1e16)) {
    return value.toExponential().replace(/e([+-])(\d)$/, (_, sign: string, digit: string) => `e${sign}0${digit}`);
  }
  return String(value);
}

export function rangeText(range: NumberRange, format: (n: number) => string): string {
  const { min, max } = range;
  if (min !== undefined && max !== undefined) {
    return `in ${range.minExclusive ? '(' : '['}${format(min)}, ${format(max)}${range.maxExclusive ? ')' : ']'}`;
  }
  if (min !== undefined) return `${range.minExclusive ? '>' : '>='} ${format(min)}`;
  if (max !== undefined) return `${range.maxExclusive ? '<' : '<='} ${format(max)}`;
  return '';
}

export function inRange(value: number, range: NumberRange): boolean {
  if (range.min !== undefined && (range.minExclusive ? value <= range.min : value < range.min)) return false;
  if (range.max !== undefined && (range.maxExclusive ? value >= range.max : value > range.max)) return false;
  return true;
}

function withRange(kind: string, text: string): string {
  return text === '' ? `must be ${kind}` : `must be ${kind} ${text}`;
}

/** A finite JSON number within `range`. */
export function floatIn(range: NumberRange = {}) {
  const requirement = withRange('a number', rangeText(range, formatFloat));
  return z.number({ error: requirement }).refine((v) => inRange(v, range), { error: requirement });
}

/** An integral JSON number within `range` (5.0 counts as 5, as in JSON's data model). */
export function intIn(range: NumberRange = {}) {
  const requirement = withRange('an integer', rangeText(range, String));
  return z
    .number({ error: requirement })
    .refine((v) => Number.isSafeInteger(v) && inRange(v, range), { error: requirement });
}

export const bool = z.boolean({ error: 'must be true or false' });
export const str = z.string({ error: 'must be a string' });
export const nonEmptyStr = z.string({ error: 'must be a non-empty string' }).min(1, { error: 'must not be empty' });

/** null and absence both mean "not given". */
export function optional<T extends z.ZodType>(schema: T) {
  return schema.nullish().transform((v): z.output<T> | undefined => v ?? undefined);
}

/** null and absence both mean "use the default". */
export function withDefault<T extends z.ZodType>(schema: T, fallback: z.output<T>) {
  return schema.nullish().transform((v): z.output<T> => v ?? fallback);
}

export type Report = (message: string, options?: { path?: PropertyKey[]; input?: unknown }) => void;

/**
 * A field checked by hand-written code, for rules zod expresses poorly (unions with
 * per-branch limits, lenient filtering, bigint ranges). `validate` sees undefined when
 * the field is absent.
 */
export function checkedField<T>(validate: (input: unknown, report: Report) => T) {
  return z
    .unknown()
    .optional()
    .transform((input, ctx) => {
      let failed = false;
      const result = validate(input, (message, options) => {
        failed = true;
        const issueInput = options && 'input' in options ? options.input : input;
        ctx.issues.push({ code: 'custom', message, input: issueInput, path: options?.path ?? [] });
      });
      return failed ? z.NEVER : result;
    });
}

/** Length in Unicode code points: what the specs mean by "characters". */
export const codePointLength = codePoints;

/** Whether `value` is an integer (number or bigint) within [min, max]; returns it as bigint. */
export function toBigIntInRange(value: unknown, min: bigint, max: bigint): bigint | undefined {
  let big: bigint;
  if (typeof value === 'bigint') big = value;
  else if (typeof value === 'number' && Number.isInteger(value)) big = BigInt(value);
  else return undefined;
  return big >= min && big <= max ? big : undefined;
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
