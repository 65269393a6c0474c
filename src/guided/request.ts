/**
 * What a client asked the output to look like (vLLM's guided decoding and OpenAI's
 * response_format), after the protocol layer picked it out of the request.
 */
export type GuidedDecodingRequest = (
  | { kind: 'json'; /** A JSON Schema, as an object or as JSON text. */ schema: object | string }
  | { kind: 'json_object' }
  | { kind: 'regex'; /** The whole output must match (ECMAScript/Python syntax). */ pattern: string }
  | { kind: 'choice'; /** The output is exactly one of these. */ choices: string[] }
) & {
  /** The request field it came from ('guided_json', 'response_format', ...), named in errors. */
  param?: string;
};

/** The request field named in errors about `request`. */
export function guidedParam(request: GuidedDecodingRequest): string {
  if (request.param) return request.param;
  switch (request.kind) {
    case 'json':
      return 'guided_json';
    case 'json_object':
      return 'response_format';
    case 'regex':
      return 'guided_regex';
    case 'choice':
      return 'guided_choice';
  }
}
