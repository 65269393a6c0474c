import { alt, EbnfGrammar, literal } from './ebnf.js';
import { GuidedDecodingError } from './errors.js';
import { jsonObjectRule } from './json-grammar.js';
import { jsonSchemaToEbnf } from './json-schema-grammar.js';
import { parseRegex } from './regex-parser.js';
import { regexToEbnf } from './regex-grammar.js';
import type { GuidedDecodingRequest } from './request.js';

export interface RequestGrammar {
  ebnf: string;
  /** Identifies the grammar for caching: equal keys, equal grammars. */
  key: string;
}

/** The schema as a JSON value (parsing JSON text); throws GuidedDecodingError when it is not JSON. */
export function schemaValue(schema: object | string): unknown {
  if (typeof schema !== 'string') return schema;
  try {
    return JSON.parse(schema);
  } catch (error) {
    throw new GuidedDecodingError(`the JSON schema is not valid JSON: ${(error as Error).message}`);
  }
}

/** The EBNF grammar of the outputs `request` allows; throws GuidedDecodingError if it cannot. */
export function requestGrammar(request: GuidedDecodingRequest): RequestGrammar {
  switch (request.kind) {
    case 'json': {
      const schema = schemaValue(request.schema);
      return { ebnf: jsonSchemaToEbnf(schema), key: `json:${JSON.stringify(schema)}` };
    }
    case 'json_object': {
      const g = new EbnfGrammar();
      return { ebnf: g.toString(jsonObjectRule(g)), key: 'json_object' };
    }
    case 'regex': {
      if (typeof request.pattern !== 'string') throw new GuidedDecodingError('the regular expression must be a string');
      const g = new EbnfGrammar();
      const expr = regexToEbnf(parseRegex(request.pattern), 'raw', g, '""');
      return { ebnf: g.toString(expr), key: `regex:${request.pattern}` };
    }
    case 'choice': {
      const { choices } = request;
      if (!Array.isArray(choices) || choices.length === 0 || choices.some((c) => typeof c !== 'string')) {
        throw new GuidedDecodingError('the choices must be a non-empty list of strings');
      }
      return { ebnf: new EbnfGrammar().toString(alt(choices.map(literal))), key: `choice:${JSON.stringify(choices)}` };
    }
    default:
      throw new GuidedDecodingError(`unknown guided decoding kind ${JSON.stringify((request as { kind: unknown }).kind)}`);
  }
}
