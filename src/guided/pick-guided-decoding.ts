import { invalidRequest } from '../common/protocol-error.js';
import type { GuidedDecodingRequest } from './request.js';

/** The request fields that ask for structured output, as the client sent them. */
export interface GuidedDecodingFields {
  guided_json?: unknown;
  guided_regex?: unknown;
  guided_choice?: unknown;
  guided_grammar?: unknown;
  /** OpenAI's {"type": "text" | "json_object" | "json_schema", "json_schema": {"name", "schema"}}. */
  response_format?: unknown;
}

export const MULTIPLE_GUIDED_KINDS_MESSAGE =
  "You can only use one kind of guided decoding ('guided_json', 'guided_regex' or 'guided_choice').";

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function fromResponseFormat(format: unknown): GuidedDecodingRequest | null {
  if (!isObject(format)) throw invalidRequest('response_format must be an object.', 'response_format');
  switch (format.type) {
    case 'text':
      return null;
    case 'json_object':
      return { kind: 'json_object', param: 'response_format' };
    case 'json_schema': {
      const spec = format.json_schema;
      if (!isObject(spec)) throw invalidRequest('response_format.json_schema must be an object.', 'response_format.json_schema');
      // No schema (or the schema true): any JSON value.
      const schema = spec.schema === undefined || spec.schema === true ? {} : spec.schema;
      if (schema === false) {
        throw invalidRequest('response_format.json_schema.schema is false: no output can satisfy it.', 'response_format.json_schema.schema');
      }
      if (!isObject(schema)) {
        throw invalidRequest('response_format.json_schema.schema must be a JSON schema object.', 'response_format.json_schema.schema');
      }
      return { kind: 'json', schema, param: 'response_format' };
    }
    default:
      throw invalidRequest('response_format.type must be one of "text", "json_object", "json_schema".', 'response_format.type');
  }
}

/**
 * vLLM's rule for guided decoding: at most one of guided_json, guided_regex,
 * guided_choice, with OpenAI's response_format (json_object / json_schema) counting as
 * guided_json. Returns the one asked for, or null for none; throws ProtocolError for two
 * kinds at once, a malformed field, or guided_grammar (not supported here).
 */
export function pickGuidedDecoding(fields: GuidedDecodingFields): GuidedDecodingRequest | null {
  const found: Array<{ field: string; request: GuidedDecodingRequest }> = [];
  const present = (value: unknown) => value !== undefined && value !== null;

  if (present(fields.guided_json)) {
    const schema = fields.guided_json;
    if (typeof schema !== 'string' && !isObject(schema)) {
      throw invalidRequest('guided_json must be a JSON schema (an object or a string).', 'guided_json');
    }
    found.push({ field: 'guided_json', request: { kind: 'json', schema, param: 'guided_json' } });
  }
  if (present(fields.guided_regex)) {
    if (typeof fields.guided_regex !== 'string') throw invalidRequest('guided_regex must be a string.', 'guided_regex');
    found.push({ field: 'guided_regex', request: { kind: 'regex', pattern: fields.guided_regex, param: 'guided_regex' } });
  }
  if (present(fields.guided_choice)) {
    const choices = fields.guided_choice;
    if (!Array.isArray(choices) || choices.length === 0 || choices.some((c) => typeof c !== 'string')) {
      throw invalidRequest('guided_choice must be a non-empty list of strings.', 'guided_choice');
    }
    found.push({ field: 'guided_choice', request: { kind: 'choice', choices: [...choices], param: 'guided_choice' } });
  }
  if (present(fields.response_format)) {
    const request = fromResponseFormat(fields.response_format);
    if (request) found.push({ field: 'response_format', request });
  }
  if (found.length > 1) throw invalidRequest(MULTIPLE_GUIDED_KINDS_MESSAGE, found[1].field);
  if (present(fields.guided_grammar)) {
    throw invalidRequest('guided_grammar is not supported: use guided_json, guided_regex or guided_choice.', 'guided_grammar');
  }
  return found[0]?.request ?? null;
}
