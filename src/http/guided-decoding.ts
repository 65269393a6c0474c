import type { GuideFactory } from '../guided/guide.js';
import type { GuidedLimits } from '../guided/limits.js';
// Not '../guided/index.js': that would pull XGrammar's loader into every bundle of the app.
import { pickGuidedDecoding, type GuidedDecodingFields } from '../guided/pick-guided-decoding.js';
import { guidedParam, type GuidedDecodingRequest } from '../guided/request.js';
import { invalidRequest } from '../common/protocol-error.js';

/**
 * Structured output in the serving layer: the one guided-decoding kind a request asks
 * for (guided_json / guided_regex / guided_choice / response_format), compiled for the
 * served tokenizer while the request is validated, before any prompt work or generation.
 * Refusals are ProtocolErrors naming the field, so they become 400s.
 */

/**
 * Compiles a constraint into the grammar the engine's sampler applies (src/guided's
 * compileGuide on XGrammar). The runtime provides it: XGrammar's WebAssembly starts
 * differently under Node, workerd and in a browser, and the app must bundle for each.
 */
export type GuideCompiler = ((request: GuidedDecodingRequest, limits?: GuidedLimits, client?: string) => Promise<GuideFactory>) & {
  /** Null while the compiler's engine works; otherwise why not (GET /health then answers 503). */
  brokenReason?: () => string | null;
};

export interface RequestGuidedFields extends GuidedDecodingFields {
  /** vLLM's (outlines') whitespace regex between JSON tokens; only meaningful with a JSON kind. */
  guided_whitespace_pattern?: unknown;
}

/**
 * The body parser keeps integers beyond 2^53 exact as bigint (for seeds); a schema is
 * read as JSON.parse reads it, so a schema sent as an object means the same as the same
 * schema sent as a string.
 */
function asJsonNumbers(value: unknown): unknown {
  if (typeof value === 'bigint') return Number(value);
  if (Array.isArray(value)) return value.map(asJsonNumbers);
  if (value !== null && typeof value === 'object') {
    // fromEntries defines properties, so a "__proto__" key stays an ordinary key.
    return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, asJsonNumbers(inner)]));
  }
  return value;
}

/**
 * The grammar of the request's structured-output constraint, for SamplingParams.guide
 * (the compiler caches one per distinct constraint), or undefined when it asks for none.
 * Throws ProtocolError naming the field for a malformed or conflicting request (two kinds
 * at once), for a constraint that cannot be compiled (an unsupported JSON Schema keyword,
 * an invalid pattern, ...), and when this runtime has no compiler.
 */
export async function requestGuide(
  compile: GuideCompiler | null,
  fields: RequestGuidedFields,
  limits?: GuidedLimits,
  /** Who asks, for the compile queue's per-client share (http/client-identity.ts). */
  client?: string,
): Promise<GuideFactory | undefined> {
  const request = pickGuidedDecoding({
    guided_json: asJsonNumbers(fields.guided_json),
    guided_regex: fields.guided_regex,
    guided_choice: fields.guided_choice,
    guided_grammar: fields.guided_grammar,
    response_format: asJsonNumbers(fields.response_format),
  });
  if (request === null) return undefined;
  const whitespace = fields.guided_whitespace_pattern;
  if (whitespace !== undefined && whitespace !== null && (request.kind === 'json' || request.kind === 'json_object')) {
    throw invalidRequest(
      'guided_whitespace_pattern is not supported: JSON output is always compact, with no whitespace between tokens. Leave it out.',
      'guided_whitespace_pattern',
    );
  }
  const param = guidedParam(request);
  if (compile === null) throw invalidRequest(`Structured output (${param}) is not available in this runtime.`, param);
  return compile(request, limits, client);
}

