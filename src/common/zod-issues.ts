/**
 * Turns zod issues into the plain sentences a client sees: "<param> <requirement>, got
 * <value>". Nothing of zod's own wording or internals reaches the message.
 *
 * Field schemas state their requirement as a phrase ("must be a number in (0.0, 2.0]");
 * issues raised by cross-field rules carry `params.sentence` and are used verbatim.
 */
import type { z } from 'zod';

type Issue = z.core.$ZodIssue;
type RawIssue = z.core.$ZodRawIssue;

/** Marks a custom issue whose message is already a complete sentence. */
export const SENTENCE = { sentence: true } as const;

const TYPE_WORDS: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  int: 'an integer',
  boolean: 'true or false',
  array: 'a list',
  tuple: 'a list',
  object: 'an object',
  record: 'an object',
  bigint: 'an integer',
  null: 'null',
};

/** Per-parse error map: the requirement phrase for issues whose schema set no message. */
export function plainErrorMap(issue: RawIssue): string {
  switch (issue.code) {
    case 'invalid_type':
      if (issue.input === undefined || issue.expected === 'nonoptional') return 'is required';
      return `must be ${TYPE_WORDS[issue.expected] ?? issue.expected}`;
    case 'too_small':
      return sizePhrase('at least', issue.origin, Number(issue.minimum), issue.inclusive !== false);
    case 'too_big':
      return sizePhrase('at most', issue.origin, Number(issue.maximum), issue.inclusive !== false);
    case 'invalid_value':
      return `must be ${issue.values.length === 1 ? '' : 'one of '}${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
    case 'invalid_union':
      if ('discriminator' in issue && typeof issue.discriminator === 'string' && Array.isArray(issue.options)) {
        // zod reports it at the discriminator key itself, e.g. messages[0].role.
        return `must be one of ${issue.options.map((o) => JSON.stringify(o)).join(', ')}`;
      }
      return 'has an invalid value';
    case 'unrecognized_keys':
      return `has unknown field${issue.keys.length === 1 ? '' : 's'} ${issue.keys.slice(0, 5).map(showValue).join(', ')}${issue.keys.length > 5 ? ` and ${issue.keys.length - 5} more` : ''}`;
    case 'invalid_format':
      return `must be a valid ${issue.format}`;
    case 'invalid_key':
      return 'has an invalid key';
    case 'invalid_element':
      return 'has an invalid element';
    case 'not_multiple_of':
      return `must be a multiple of ${String(issue.divisor)}`;
    default:
      return 'is invalid';
  }
}

function sizePhrase(bound: 'at least' | 'at most', origin: string, limit: number, inclusive: boolean): string {
  if (origin === 'string') {
    if (bound === 'at least' && limit === 1) return 'must not be empty';
    return `must be ${bound} ${limit} characters long`;
  }
  if (origin === 'array' || origin === 'set') {
    if (bound === 'at least' && limit === 1) return 'must not be empty';
    return `must have ${bound} ${limit} items`;
  }
  const op = bound === 'at least' ? (inclusive ? '>=' : '>') : inclusive ? '<=' : '<';
  return `must be ${op} ${limit}`;
}

/** ["messages", 1, "content"] → "messages[1].content"; [] → null. */
export function formatPath(path: readonly PropertyKey[]): string | null {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out === '' ? String(key) : `.${String(key)}`;
  }
  return out === '' ? null : out;
}

/** A short, safe rendering of an offending value for an error message. */
export function showValue(value: unknown): string {
  switch (typeof value) {
    case 'string': {
      const limit = 40;
      return value.length > limit ? `${JSON.stringify(value.slice(0, limit)).slice(0, -1)}..."` : JSON.stringify(value);
    }
    case 'number':
    case 'bigint':
    case 'boolean': {
      const text = String(value);
      return text.length > 40 ? `${text.slice(0, 40)}…` : text;
    }
    case 'object':
      if (value === null) return 'null';
      if (Array.isArray(value)) return value.length === 0 ? '[]' : 'a list';
      return Object.keys(value).length === 0 ? '{}' : 'an object';
    default:
      return typeof value;
  }
}

export interface DescribedIssue {
  message: string;
  /** Dotted path of the parameter at fault; null when it is the whole body. */
  param: string | null;
}

export function describeIssue(issue: Issue, subjectForRoot = 'request body'): DescribedIssue {
  const specific = issue.code === 'invalid_union' ? soleNearMiss(issue) : undefined;
  if (specific !== undefined) return describeIssue(specific, subjectForRoot);
  const param = formatPath(issue.path);
  const params = (issue as { params?: Record<string, unknown> }).params;
  if (params?.sentence === true) return { message: issue.message, param };
  let message = `${param ?? subjectForRoot} ${issue.message}`;
  const hasInput = 'input' in issue && issue.input !== undefined;
  const aboutShape = issue.code === 'unrecognized_keys' || (issue.code === 'invalid_union' && 'discriminator' in issue);
  if (hasInput && !aboutShape) {
    message += `, got ${showValue(issue.input)}`;
  }
  return { message, param };
}

/**
 * When a value has the right shape for exactly one branch of a union (say a list, for
 * "string or list of parts") but fails inside it, that branch's issue is the useful one.
 */
function soleNearMiss(issue: z.core.$ZodIssueInvalidUnion): Issue | undefined {
  if ('discriminator' in issue) return undefined;
  const nearMisses = issue.errors.filter((branch) => {
    const first = branch[0];
    return first !== undefined && !(first.code === 'invalid_type' && first.path.length === 0);
  });
  const only = nearMisses.length === 1 ? nearMisses[0]![0] : undefined;
  if (only === undefined) return undefined;
  return { ...only, path: [...issue.path, ...only.path] } as Issue;
}
